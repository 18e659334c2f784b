# llm-d's routing layer in front of a model server, on one H100 pool:
#
#   - the model server: Llama 3.1 8B Instruct in bf16 served by vLLM, two
#     replicas of one H100 each (aiplatform_model_deployment: the plan checks
#     that 16 GB of weights + one 32,768-token request of KV cache fit one
#     GPU, sizes the startup probe from the load time, keeps liveness on the
#     server's own /health);
#   - an InferencePool over exactly those pods, and its endpoint picker
#     (aiplatform_inference_pool): the Gateway API Inference Extension's
#     picker Deployment + Service + ServiceAccount + Role, the pool's
#     endpointPickerRef pointing at it. The plan compares the pool's selector
#     with the model deployment's pod labels and refuses a mismatch.
#
# A Gateway (any implementation of the Inference Extension) then routes an
# HTTPRoute whose backendRef is the InferencePool (see the `inference_pool`
# output); the gateway asks the picker for an endpoint on every request.
#
#   terraform apply -var kubeconfig=PATH
#
# The cluster needs the InferencePool CRD (inference.networking.k8s.io/v1,
# config/crd/bases of sigs.k8s.io/gateway-api-inference-extension v1.6.0)
# and nodes labelled nvidia.com/gpu.product = NVIDIA-H100-80GB-HBM3 with
# NVIDIA's nvidia.com/gpu.memory label.

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
  description = "Existing namespace of the model server and its pool."
  type        = string
  default     = "default"
}

variable "replicas" {
  description = "Model server replicas, one H100 each."
  type        = number
  default     = 2
}

provider "aiplatform" {
  config_path = var.kubeconfig
}

resource "aiplatform_model_deployment" "llama" {
  name      = "llama-8b"
  namespace = var.namespace
  replicas  = var.replicas

  template = {
    labels = { "app.kubernetes.io/part-of" = "llm-d" }
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
  port             = 8000
}

resource "aiplatform_inference_pool" "llama" {
  name      = "llama-8b"
  namespace = var.namespace
  # aiplatform_model_deployment labels its pods with its name; the plan
  # checks this against the live Deployment's pod template.
  selector     = { "aiplatform.io/model-deployment" = aiplatform_model_deployment.llama.name }
  target_ports = [aiplatform_model_deployment.llama.port]

  serving_group = {
    kind = "Deployment"
    name = aiplatform_model_deployment.llama.name
  }

  failure_mode     = "FailClose"
  picker_replicas  = 1
  picker_log_level = 4
  picker_template = {
    containers = [{ name = "epp", requests = { cpu = "100m", memory = "128Mi" }, limits = { memory = "512Mi" } }]
  }

  timeouts {
    create = "5m"
    update = "5m"
  }
}

output "inference_pool" {
  description = "The InferencePool, for an HTTPRoute's backendRef (group inference.networking.k8s.io, kind InferencePool)."
  value       = { namespace = aiplatform_inference_pool.llama.namespace, name = aiplatform_inference_pool.llama.name }
}

output "picker_endpoint" {
  description = "The endpoint picker's ext-proc address."
  value       = aiplatform_inference_pool.llama.picker_endpoint
}

output "model_endpoint" {
  description = "The model server's own Service (without the picker)."
  value       = aiplatform_model_deployment.llama.endpoint
}
