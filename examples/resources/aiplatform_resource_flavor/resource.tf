# One flavor per GPU node pool. Kueue puts node_labels into the admitted
# pods' node selector and adds the tolerations, so workloads land on the pool.
resource "aiplatform_resource_flavor" "h100" {
  name = "h100"
  node_labels = {
    "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3"
  }
  node_taints = [
    { key = "nvidia.com/gpu", value = "present", effect = "NoSchedule" },
  ]
  tolerations = [
    { key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" },
  ]
}
