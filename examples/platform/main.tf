# An empty GPU cluster to a shared platform in one `terraform apply`: Kueue
# installed from its chart, then a flavor per GPU node pool, a ClusterQueue
# per team and their LocalQueues. The queue resources need Kueue's CRDs; they
# plan without them (their schemas are typed) and are applied after the
# install because they depend on it. Destroy goes in reverse: queues first,
# then Kueue (its CRDs stay unless remove_crds = true).
#
#   terraform apply -var kubeconfig=PATH

terraform {
  required_providers {
    aiplatform = {
      source = "aiplatform/aiplatform"
    }
  }
}

variable "kubeconfig" {
  description = "Path of the cluster's kubeconfig."
  type        = string
  default     = "~/.kube/config"
}

variable "kueue_chart_path" {
  description = "A local copy of Kueue's chart (charts/kueue of the Kueue repository); null installs the upstream OCI chart."
  type        = string
  default     = null
}

provider "aiplatform" {
  config_path = var.kubeconfig
}

resource "aiplatform_kueue" "this" {
  version      = "0.17.0"
  chart        = var.kueue_chart_path == null ? null : { path = var.kueue_chart_path }
  integrations = ["batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob"]
}

resource "aiplatform_resource_flavor" "gpu" {
  name        = "gpu"
  node_labels = { "nvidia.com/gpu.present" = "true" }
  depends_on  = [aiplatform_kueue.this]
}

resource "aiplatform_cohort" "ai" {
  name       = "ai"
  depends_on = [aiplatform_kueue.this]
}

# One ClusterQueue per team, sharing unused GPUs through the cohort.
resource "aiplatform_cluster_queue" "research" {
  name   = "research"
  cohort = aiplatform_cohort.ai.name
  resource_groups = [{
    covered_resources = ["cpu", "memory", "nvidia.com/gpu"]
    flavors = [{
      name = aiplatform_resource_flavor.gpu.name
      resources = [
        { name = "cpu", nominal_quota = "64" },
        { name = "memory", nominal_quota = "512Gi" },
        { name = "nvidia.com/gpu", nominal_quota = "16" },
      ]
    }]
  }]
}

resource "aiplatform_cluster_queue" "serving" {
  name   = "serving"
  cohort = aiplatform_cohort.ai.name
  resource_groups = [{
    covered_resources = ["cpu", "memory", "nvidia.com/gpu"]
    flavors = [{
      name = aiplatform_resource_flavor.gpu.name
      resources = [
        { name = "cpu", nominal_quota = "32" },
        { name = "memory", nominal_quota = "256Gi" },
        { name = "nvidia.com/gpu", nominal_quota = "8" },
      ]
    }]
  }]
}

resource "aiplatform_local_queue" "research" {
  name          = "research"
  namespace     = "default"
  cluster_queue = aiplatform_cluster_queue.research.name
}

resource "aiplatform_local_queue" "serving" {
  name          = "serving"
  namespace     = "default"
  cluster_queue = aiplatform_cluster_queue.serving.name
}

output "kueue" {
  description = "The Kueue release: revision, status and any drift found by the last refresh."
  value = {
    revision = aiplatform_kueue.this.revision
    status   = aiplatform_kueue.this.status
    drift    = aiplatform_kueue.this.drift
  }
}
