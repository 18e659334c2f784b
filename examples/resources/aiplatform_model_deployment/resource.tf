# Llama 3.1 8B Instruct in bf16 (16 GB) served by vLLM on one H100 per
# replica. The plan checks the fit rule on one GPU: 16 GB of weights + the
# KV cache of one 32,768-token request (32,768 × 131,072 B = 4.29 GB) + 1 GiB
# of overhead = 21.37 GB ≤ 76.97 GB usable (the nodes' nvidia.com/gpu.memory
# label, 81559 MiB, after the 10% reserve): 13 such requests fit at once.
# gpus_per_replica = 1 divides the 32 attention heads and the 8 KV heads.
# The startup probe lets the server read 16 GB from the node-local cache at
# 1 GiB/s: ⌈(14.9 s + 60 s) × 2 ÷ 10 s⌉ = 15 checks of 10 s; the liveness
# probe (its own /health) only starts after it, readiness is /v1/models.
resource "aiplatform_model_deployment" "llama" {
  name      = "llama-8b"
  namespace = "default"
  replicas  = 2

  template = {
    containers = [{
      name  = "server"
      image = "vllm/vllm-openai:v0.9.0"
      args = ["--model", "/models/llama", "--served-model-name", "llama-3.1-8b",
      "--max-model-len", "32768", "--tensor-parallel-size", "1", "--gpu-memory-utilization", "0.9"]
      limits = { cpu = "8", memory = "64Gi" }
    }]
    node_selector = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
    tolerations   = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  }

  model = {
    params_billion           = 8
    dtype                    = "bf16"
    context_length           = 32768
    kv_cache_bytes_per_token = 131072 # 2 × 32 layers × 8 KV heads × 128 × 2 B
    attention_heads          = 32
    kv_heads                 = 8
  }
  gpus_per_replica = 1
  # gpu_memory: from the pool's nvidia.com/gpu.memory label

  # The outputs of an aiplatform_model_cache, e.g. { mode = aiplatform_model_cache.llama.mode, … }.
  model_cache = {
    mode       = "node_local"
    host_path  = "/var/lib/model-cache/default/llama-8b"
    sub_path   = "main-0e9e39f2"
    mount_path = "/models/llama"
  }
}
