# Free GPUs on the H100 nodes, and the largest job that fits on one node now.
data "aiplatform_gpu_capacity" "h100" {
  node_selector = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
}

output "h100_free" {
  value = {
    free          = data.aiplatform_gpu_capacity.h100.free_total
    largest_block = data.aiplatform_gpu_capacity.h100.largest_free_block
    idle_nodes    = data.aiplatform_gpu_capacity.h100.whole_free_nodes
  }
}
