# Every H100 node gets the pool's label and taint; the computed attributes
# say what the pool really has, read from the nodes at every plan.
resource "aiplatform_gpu_node_pool" "h100" {
  name      = "h100"
  selector  = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
  labels    = { "example.com/pool" = "h100" }
  taints    = [{ key = "example.com/gpu-pool", value = "h100", effect = "NoSchedule" }]
  min_nodes = 1
}

output "h100_gpus" {
  value = aiplatform_gpu_node_pool.h100.gpu_allocatable
}
