# A preset for Llama 3.1 70B Instruct in bf16 (140 GB) that teams'
# LLMInferenceServices name in spec.baseRefs, beside KServe's published vLLM
# template (kserve-config-llm-template; a preset cannot name base presets
# itself: KServe's webhook refuses baseRefs in one). It sets the model, tensor
# parallelism 4 with two data-parallel ranks per pod (8 GPUs), the pool, the
# model cache and a KServe-managed route, gateway and endpoint picker.
# The plan checks the fit over tensor × pipeline = 4 GPUs: 35 GB of weights +
# 0.67 GB of one 8,192-token request's KV cache + 1 GiB ≤ 76.97 GB per H100,
# 60 such requests per model copy; tensor 4 divides the 64 attention heads and
# the 8 KV heads; 8 GPUs per pod fit one node.
# Reading 140 GB from the claim at 200 MiB/s takes 668 s: the startup probe
# allows ⌈(668 + 60) × 2 ÷ 10⌉ = 146 checks of 10 s.
resource "aiplatform_llm_service_preset" "llama_70b" {
  name      = "llama-70b-h100"
  namespace = "default" # KServe's own namespace (kserve) publishes it to every namespace

  model = {
    uri  = "hf://meta-llama/Llama-3.1-70B-Instruct"
    name = "llama-3.1-70b"
  }
  sizing = {
    params_billion           = 70
    dtype                    = "bf16"
    context_length           = 8192
    kv_cache_bytes_per_token = 327680 # 2 × 80 layers × 8 KV heads × 128 × 2 B
    attention_heads          = 64
    kv_heads                 = 8
  }
  parallelism = { tensor = 4, data = 4, data_local = 2 }
  replicas    = 2

  template = {
    containers = [{
      name     = "main"
      image    = "ghcr.io/llm-d/llm-d-cuda:v0.8.0"
      requests = { cpu = "16", memory = "256Gi" }
      limits   = { cpu = "32", memory = "512Gi" }
    }]
    node_selector = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
    tolerations   = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  }

  model_cache = {
    claim_name = "llama-70b-cache"
    sub_path   = "main-0e9e39f2"
    mount_path = "/mnt/models"
  }

  router = {
    route              = true
    gateway            = true
    scheduler          = true
    scheduler_replicas = 2
  }
}
