# How to serve a 70B model in bf16 (140 GB of weights) on H100 80GB nodes:
# 80 × 10^9 × 0.9 = 72 GB usable per card, so 2 cards (144 GB) hold it —
# tensor parallel 2 on one node, 4 replicas per 8-GPU node, no
# LeaderWorkerSet. The fit rule counts, per GPU, 70 GB of weights + half of
# one request's 1 GB KV cache + 1 GiB of overhead = 71.57 GB ≤ 72 GB; a
# replica holds ⌊(72 − 70 − 1.07) × 2 ÷ 1⌋ = 1 request of that size at once:
# it fits, barely. 3 or 4 GPUs would leave room for dozens.
data "aiplatform_inference_sizing" "llama_70b" {
  params_billion             = 70
  dtype                      = "bf16"
  gpu_memory                 = "80G" # 80 × 10^9 bytes; "80Gi" would be 80 × 2^30
  gpus_per_node              = 8
  kv_cache_bytes_per_request = 1000000000
}

# DeepSeek-V3 (671B parameters, fp8, 128 attention heads): 671 GB needs 10
# cards of 72 GB; more than one node must be whole nodes, and 16 divides the
# 128 heads, so one replica spans 2 nodes × 8 GPUs and needs a LeaderWorkerSet.
data "aiplatform_inference_sizing" "deepseek_v3" {
  params_billion  = 671
  dtype           = "fp8"
  gpu_memory      = "80G"
  gpus_per_node   = 8
  attention_heads = 128
}

output "llama_70b" {
  value = {
    gpus_per_replica  = data.aiplatform_inference_sizing.llama_70b.min_gpus          # 2
    replicas_per_node = data.aiplatform_inference_sizing.llama_70b.replicas_per_node # 4
    concurrency       = data.aiplatform_inference_sizing.llama_70b.max_concurrency_per_replica
  }
}

output "deepseek_v3" {
  value = {
    tensor_parallel   = data.aiplatform_inference_sizing.deepseek_v3.tensor_parallel   # 16
    nodes_per_replica = data.aiplatform_inference_sizing.deepseek_v3.nodes_per_replica # 2
    needs_lws         = data.aiplatform_inference_sizing.deepseek_v3.needs_lws         # true
  }
}
