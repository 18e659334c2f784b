# DeepSeek-V3 (671B parameters in fp8, 671 GB) on H100 nodes: one replica is
# a group of 2 pods × 8 GPUs on 2 nodes — the leader runs the vLLM API
# server, the worker joins its Ray cluster — sharded 16 ways. The plan
# checks 671 GB ÷ 16 = 41.94 GB per GPU against the GPUs' memory, read from
# the nodes' nvidia.com/gpu.memory label (81559 MiB ≈ 85.5 GB, 76.97 GB after
# the 10% reserve), and that each pod's 8 GPUs fit one node of the pool.
# The leader's startup probe allows ⌈(671e9 B ÷ 200 MiB/s + 60 s) × 2 ÷ 10 s⌉
# = 652 failed checks (about 1 h 49 min) to read the weights; no liveness probe.
resource "aiplatform_lws_group" "deepseek" {
  name      = "deepseek-v3"
  namespace = "default"
  replicas  = 1
  size      = 2

  leader = {
    image = "vllm/vllm-openai:v0.9.0"
    command = ["sh", "-c", join(" ", [
      "ray start --head --port=6379 &&",
      "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8 --pipeline-parallel-size 2",
    ])]
    gpus          = 8
    cpu           = "32"
    memory        = "512Gi"
    node_selector = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
    tolerations   = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  }
  worker = {
    image         = "vllm/vllm-openai:v0.9.0"
    command       = ["sh", "-c", "ray start --address=$(LWS_LEADER_ADDRESS):6379 --block"]
    gpus          = 8
    cpu           = "32"
    memory        = "512Gi"
    node_selector = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
    tolerations   = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  }

  serving = {
    params_billion             = 671
    dtype                      = "fp8"
    kv_cache_bytes_per_request = 4000000000 # ~ 4 GB for a long context
    # gpu_memory: from the pool's nvidia.com/gpu.memory label
    # tensor_parallel: every GPU of the group (16)
  }
}

output "deepseek_capacity" {
  value = {
    gpus_total      = aiplatform_lws_group.deepseek.gpus_total      # 16
    max_concurrency = aiplatform_lws_group.deepseek.max_concurrency # requests held at once
  }
}
