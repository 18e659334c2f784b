# A vLLM ClusterServingRuntime for Llama 3.1 8B Instruct in bf16 (16 GB) on
# one H100 per replica. InferenceServices of model format "vLLM" that name no
# runtime get this one (auto_select, priority 2); KServe merges their
# predictor into kserve-container. The plan checks the fit rule on one GPU:
# 16 GB of weights + the KV cache of one 32,768-token request (4.29 GB) +
# 1 GiB of overhead ≤ 76.97 GB usable (the pool's nvidia.com/gpu.memory label,
# 81559 MiB, after the 10% reserve): 13 such requests at once. The startup
# probe lets the server read 16 GB from the node-local cache at 1 GiB/s:
# ⌈(14.9 s + 60 s) × 2 ÷ 10 s⌉ = 15 checks of 10 s; liveness (its own
# /health) only starts after it, readiness is /v1/models.
resource "aiplatform_serving_runtime" "vllm" {
  name = "vllm-llama-8b"

  supported_model_formats = [{ name = "vLLM", version = "1", auto_select = true, priority = 2 }]
  protocol_versions       = ["v2", "v1"]

  template = {
    containers = [{
      name  = "kserve-container"
      image = "vllm/vllm-openai:v0.9.0"
      args = ["--model", "/mnt/model-cache", "--port", "8080", "--served-model-name", "{{.Name}}",
      "--max-model-len", "32768", "--tensor-parallel-size", "1", "--gpu-memory-utilization", "0.9"]
      env      = [{ name = "HF_TOKEN", value_from = { secret_key_ref = { name = "hf-token", key = "token", optional = true } } }]
      requests = { cpu = "4", memory = "32Gi" }
      limits   = { cpu = "8", memory = "64Gi" }
    }]
    # An aiplatform_gpu_node_pool's selector and tolerations.
    node_selector = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
    tolerations   = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
    annotations   = { "prometheus.kserve.io/port" = "8080", "prometheus.kserve.io/path" = "/metrics" }
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

  # The outputs of an aiplatform_model_cache, e.g. { mode = aiplatform_model_cache.llama.mode, … }.
  # Not at /mnt/models: KServe mounts its own model directory there in every
  # predictor pod, and a second mount at that path makes the pod invalid.
  model_cache = {
    mode       = "node_local"
    host_path  = "/var/lib/model-cache/default/llama-8b"
    sub_path   = "main-0e9e39f2"
    mount_path = "/mnt/model-cache"
  }
}
