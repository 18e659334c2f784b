# Serving on KServe, one H100 pool:
#
#   - KServe v0.20 itself (deployment mode Standard, webhook certificates
#     issued by the provider) with its LLMInferenceService controller;
#   - the pool: every H100 node, its GPUs counted at plan time;
#   - a vLLM ClusterServingRuntime on that pool for Llama 3.1 8B, sized at
#     plan (weights + one request's KV cache + overhead per GPU) with its
#     startup probe from the load time and the model cache mounted read-only:
#     teams' InferenceServices of format vLLM get it without naming it;
#   - an LLMInferenceService preset for Llama 3.1 70B on 4 GPUs per model copy
#     (two copies per 8-GPU pod) that teams' LLMInferenceServices name in
#     spec.baseRefs.
#
# The runtime and the preset are KServe objects: they depend on the install.
# The model caches are aiplatform_model_cache outputs here given as literals.
#
#   terraform apply -var kubeconfig=PATH
#
# Without access to ghcr.io, KServe's charts from a local directory:
# -var kserve_chart_path=…/charts/kserve-resources (charts/ of
# github.com/kserve/kserve@v0.20.0; the kserve-crd and kserve-llmisvc-*
# charts are taken from beside it).

terraform {
  required_providers {
    aiplatform = {
      source = "aiplatform/aiplatform"
    }
  }
}

variable "kubeconfig" {
  description = "Path of the cluster's kubeconfig."
  type        = string
  default     = "~/.kube/config"
}

variable "namespace" {
  description = "Existing namespace the LLM preset is published in (KServe's own, kserve, publishes it to every namespace)."
  type        = string
  default     = "default"
}

variable "gpu_product" {
  description = "nvidia.com/gpu.product of the pool's nodes (8 GPUs each)."
  type        = string
  default     = "NVIDIA-H100-80GB-HBM3"
}

variable "kserve_chart_path" {
  description = "A local copy of KServe's kserve-resources chart, its other charts beside it; null installs the upstream OCI charts."
  type        = string
  default     = null
}

provider "aiplatform" {
  config_path = var.kubeconfig
}

resource "aiplatform_kserve" "this" {
  version               = "v0.20.0"
  chart                 = var.kserve_chart_path == null ? null : { path = var.kserve_chart_path }
  llm_inference_service = true
}

resource "aiplatform_gpu_node_pool" "serve" {
  name      = "serve-h100"
  selector  = { "nvidia.com/gpu.product" = var.gpu_product }
  labels    = { "example.com/pool" = "serve-h100" }
  min_nodes = 1
}

locals {
  gpu_toleration = { key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }
}

# 8B in bf16 is 16 GB; one request of 32,768 tokens × 131,072 B of KV is
# 4.29 GB; with 1 GiB of overhead one H100 (76.97 GB usable) holds 13 such
# requests. From a node-local cache at 1 GiB/s the startup probe allows
# ⌈(14.9 s + 60 s) × 2 ÷ 10 s⌉ = 15 checks.
resource "aiplatform_serving_runtime" "vllm" {
  name                    = "vllm-llama-8b"
  supported_model_formats = [{ name = "vLLM", version = "1", auto_select = true, priority = 2 }]
  protocol_versions       = ["v2", "v1"]

  template = {
    containers = [{
      name  = "kserve-container"
      image = "vllm/vllm-openai:v0.9.0"
      args = ["--model", "/mnt/model-cache", "--port", "8080", "--served-model-name", "{{.Name}}",
      "--max-model-len", "32768", "--gpu-memory-utilization", "0.9"]
      env      = [{ name = "HF_TOKEN", value_from = { secret_key_ref = { name = "hf-token", key = "token", optional = true } } }]
      requests = { cpu = "4", memory = "32Gi" }
      limits   = { cpu = "8", memory = "64Gi" }
    }]
    node_selector = aiplatform_gpu_node_pool.serve.selector
    tolerations   = [local.gpu_toleration]
  }

  model = {
    params_billion           = 8
    dtype                    = "bf16"
    context_length           = 32768
    kv_cache_bytes_per_token = 131072
    attention_heads          = 32
    kv_heads                 = 8
  }
  gpus_per_replica = 1
  # Not /mnt/models: KServe mounts its own model directory there in every
  # predictor pod (the storage initializer's download, or, for an
  # InferenceService without storageUri, the model agent's), and a second
  # mount at that path makes the pod invalid — the Deployment gets no pod.
  model_cache = {
    mode       = "node_local"
    host_path  = "/var/lib/model-cache/default/llama-8b"
    sub_path   = "main-0e9e39f2"
    mount_path = "/mnt/model-cache"
  }
  depends_on = [aiplatform_kserve.this]
}

# 70B in bf16 is 140 GB, 35 GB on each of tensor 4 GPUs, plus 0.67 GB of one
# 8,192-token request: 60 requests per model copy. Two data-parallel copies
# per pod make 8 GPUs, one node. 140 GB from the claim at 200 MiB/s: a
# startup probe of 146 checks.
resource "aiplatform_llm_service_preset" "llama_70b" {
  name      = "llama-70b-h100"
  namespace = var.namespace
  # No base_refs: KServe v0.20's webhook refuses baseRefs in an
  # LLMInferenceServiceConfig ("support for recursive refs has been
  # disabled"); the controller merges its own vLLM template
  # (kserve-config-llm-template, from KServe's kserve-runtime-configs chart)
  # under the preset by itself.

  model = {
    uri  = "hf://meta-llama/Llama-3.1-70B-Instruct"
    name = "llama-3.1-70b"
  }
  sizing = {
    params_billion           = 70
    dtype                    = "bf16"
    context_length           = 8192
    kv_cache_bytes_per_token = 327680
    attention_heads          = 64
    kv_heads                 = 8
  }
  parallelism = { tensor = 4, data = 2, data_local = 2 }

  template = {
    containers = [{
      name     = "main"
      image    = "ghcr.io/llm-d/llm-d-cuda:v0.8.0"
      requests = { cpu = "16", memory = "256Gi" }
      limits   = { cpu = "32", memory = "512Gi" }
    }]
    node_selector = aiplatform_gpu_node_pool.serve.selector
    tolerations   = [local.gpu_toleration]
  }
  model_cache = {
    claim_name = "llama-70b-cache"
    sub_path   = "main-0e9e39f2"
    mount_path = "/mnt/models"
  }
  router     = { route = true, gateway = true, scheduler = true }
  depends_on = [aiplatform_kserve.this]
}

output "runtime" {
  value = {
    name                        = aiplatform_serving_runtime.vllm.name
    kind                        = aiplatform_serving_runtime.vllm.kind
    max_concurrency_per_replica = aiplatform_serving_runtime.vllm.max_concurrency_per_replica
  }
}

output "preset" {
  value = {
    name                        = aiplatform_llm_service_preset.llama_70b.name
    gpus_per_pod                = aiplatform_llm_service_preset.llama_70b.gpus_per_pod
    max_concurrency_per_replica = aiplatform_llm_service_preset.llama_70b.max_concurrency_per_replica
  }
}
