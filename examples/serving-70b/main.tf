# Serving a 70B model in bf16 on the H100 pool, sized by arithmetic instead
# of trial and error: the sizing data source says how many GPUs one replica
# needs (140 GB of weights on 72 GB-usable cards → 2, tensor parallel 2) and
# whether a replica spans nodes (here not: size 1, no worker pods); the
# LeaderWorkerSet group takes those numbers, and its plan checks them again
# against the live nodes (each pod's GPUs fit a node of the pool) with the
# same fit rule: weights ÷ tensor parallel + one request's KV cache ÷ tensor
# parallel + overhead ≤ a card's usable memory. See
# docs/guides/inference-sizing.md.
#
# The overhead is left at the rules' default, 1 GiB per GPU (CUDA context,
# activations, CUDA graphs), on purpose: it is what vLLM really keeps, and
# setting it to 0 to get a bigger number would only move the out-of-memory
# error from the plan to the pods. With it, two cards are just enough: each
# holds 70 GB of weights + 1.07 GB of overhead of its 72 GB, which leaves
# (72 − 70 − 1.07) × 2 = 1.85 GB of KV cache per replica — one request of
# 1 GB, so --max-num-seqs is 1 and the four replicas serve 4 requests at
# once. For real traffic give a replica more room: fp8 weights, or tensor
# parallel 4 (the data source's min_gpus is the least that fits, not the
# best), which holds (72 − 35 − 1.07) × 4 ÷ 1 = 143 requests.
#
#   terraform apply -var kubeconfig=PATH
#   terraform output serving

terraform {
  required_providers {
    aiplatform = {
      source = "aiplatform/aiplatform"
    }
  }
}

variable "kubeconfig" {
  description = "Path of the kubeconfig of the cluster."
  type        = string
  default     = "~/.kube/config"
}

variable "replicas" {
  description = "Serving replicas (groups)."
  type        = number
  default     = 4
}

provider "aiplatform" {
  config_path = var.kubeconfig
}

locals {
  pool        = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
  gpu_memory  = "80G" # as the card is sold: 80 × 10^9 bytes
  kv_per_req  = 1000000000
  params      = 70
  dtype       = "bf16"
  image       = "vllm/vllm-openai:v0.9.0"
  tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
}

data "aiplatform_inference_sizing" "llama" {
  params_billion             = local.params
  dtype                      = local.dtype
  gpu_memory                 = local.gpu_memory
  gpus_per_node              = 8
  kv_cache_bytes_per_request = local.kv_per_req
}

locals {
  sizing       = data.aiplatform_inference_sizing.llama
  gpus_per_pod = local.sizing.tensor_parallel / local.sizing.nodes_per_replica
  server = {
    image = local.image
    args = ["--model", "meta-llama/Llama-3.3-70B-Instruct",
      "--tensor-parallel-size", tostring(local.sizing.tensor_parallel),
    "--max-num-seqs", tostring(local.sizing.max_concurrency_per_replica)]
    gpus          = local.gpus_per_pod
    cpu           = "16"
    memory        = "256Gi"
    node_selector = local.pool
    tolerations   = local.tolerations
  }
}

resource "aiplatform_lws_group" "llama" {
  name      = "llama-70b"
  namespace = "default"
  replicas  = var.replicas
  # One pod per node of a replica: 1 here; 2 or more would make it a
  # leader + workers group (then set leader to the API server's template).
  size   = local.sizing.nodes_per_replica
  worker = local.server

  serving = {
    params_billion             = local.params
    dtype                      = local.dtype
    gpu_memory                 = local.gpu_memory
    tensor_parallel            = local.sizing.tensor_parallel
    kv_cache_bytes_per_request = local.kv_per_req
  }
}

output "serving" {
  value = {
    gpus_per_replica  = local.sizing.min_gpus                      # 2
    replicas_per_node = local.sizing.replicas_per_node             # 4
    gpus_total        = aiplatform_lws_group.llama.gpus_total      # 8
    max_concurrency   = aiplatform_lws_group.llama.max_concurrency # 4 replicas × 1
  }
}
