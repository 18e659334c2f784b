# Gate training on the fabric: all_reduce_perf across every Ready node of the
# H100 pool, 8 GPUs each, judged against 8 × 400 Gb/s (400 GB/s). A bad result
# fails the apply with the numbers and a checklist; a node joining the pool
# makes the next plan run the check again.
resource "aiplatform_gpu_node_pool" "h100" {
  name     = "h100"
  selector = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
}

resource "aiplatform_nccl_check" "h100" {
  name          = "h100-fabric"
  namespace     = "default"
  node_selector = aiplatform_gpu_node_pool.h100.selector
  gpus_per_node = 8

  nics_per_node = 8   # compute-fabric NICs only
  nic_gbps      = 400 # peak = 8 × 400 ÷ 8 = 400 GB/s

  env = {
    NCCL_DEBUG        = "INFO" # records the transport (IB, RoCE, Socket)
    NCCL_DEBUG_SUBSYS = "INIT,NET"
    NCCL_IB_HCA       = "mlx5"
  }
  rdma_resources = { "rdma/ib" = 1 }
  queue_name     = "platform" # wait for free nodes in Kueue instead of competing with jobs

  fail_on = "bad" # or "acceptable", or "never" to only record
  timeout = "30m"
  triggers = {
    driver = "550.90.07" # re-run after a driver upgrade
  }
}

output "fabric" {
  value = {
    verdict   = aiplatform_nccl_check.h100.verdict
    busbw     = aiplatform_nccl_check.h100.busbw_gbps
    ratio     = aiplatform_nccl_check.h100.ratio
    transport = aiplatform_nccl_check.h100.transport
    nodes     = aiplatform_nccl_check.h100.nodes_tested
  }
}
