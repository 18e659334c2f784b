resource "aiplatform_resource_flavor" "h100" {
  name        = "h100"
  node_labels = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
}

# 16 H100s for the research team, able to borrow 8 more from the "ai" cohort
# and to lend at most 4 of its own. Only namespaces labelled team=research
# may submit.
resource "aiplatform_cluster_queue" "research" {
  name   = "research"
  cohort = "ai"
  namespace_selector = {
    match_labels = { team = "research" }
  }
  resource_groups = [{
    covered_resources = ["cpu", "memory", "nvidia.com/gpu"]
    flavors = [{
      name = aiplatform_resource_flavor.h100.name
      resources = [
        { name = "cpu", nominal_quota = "192" },
        { name = "memory", nominal_quota = "1536Gi" },
        { name = "nvidia.com/gpu", nominal_quota = "16", borrowing_limit = "8", lending_limit = "4" },
      ]
    }]
  }]
}
