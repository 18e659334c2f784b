# Serving a 70B model on the H100 pool, starting in seconds: the weights are
# fetched once onto every H100 node's local disk, and serving replicas (in
# the "serving" queue) mount them read-only, with a startup probe sized to
# read 140 GB and no liveness probe that could kill a replica still loading.
#
#   terraform apply -var kubeconfig=PATH
#   terraform output -json serving_pod_spec

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

provider "aiplatform" {
  config_path = var.kubeconfig
}

resource "aiplatform_gpu_node_pool" "h100" {
  name      = "h100-serving"
  selector  = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
  min_nodes = 1
}

resource "aiplatform_resource_flavor" "h100" {
  name        = "h100-serving"
  node_labels = aiplatform_gpu_node_pool.h100.selector
}

resource "aiplatform_cluster_queue" "serving" {
  name = "serving"
  resource_groups = [{
    covered_resources = ["nvidia.com/gpu"]
    flavors = [{
      name      = aiplatform_resource_flavor.h100.name
      resources = [{ name = "nvidia.com/gpu", nominal_quota = tostring(aiplatform_gpu_node_pool.h100.gpu_allocatable) }]
    }]
  }]
}

resource "aiplatform_local_queue" "serving" {
  name          = "serving"
  namespace     = "default"
  cluster_queue = aiplatform_cluster_queue.serving.name
}

# 70B parameters in bf16: 140 GB, on each H100 node's NVMe.
resource "aiplatform_model_cache" "r1_70b" {
  name      = "deepseek-r1-70b"
  namespace = "default"
  mode      = "node_local"
  source = {
    uri      = "hf://deepseek-ai/DeepSeek-R1-Distill-Llama-70B"
    revision = "main"
  }
  node_selector = aiplatform_gpu_node_pool.h100.selector
  timeout       = "2h"
}

locals {
  cache = aiplatform_model_cache.r1_70b
  # Startup budget: (size ÷ read throughput + overhead) × safety, in probe
  # periods: (140e9 B ÷ 1 GiB/s + 60 s) × 2 ÷ 10 s → 39 failures allowed.
  model_bytes = coalesce(local.cache.size_bytes, 140e9)
  period      = 10
  threshold   = ceil((local.model_bytes / pow(2, 30) + 60) * 2 / local.period)
}

output "serving_pod_spec" {
  description = "What a serving replica on the pool adds to its pod spec to read the cached weights."
  value = {
    volumes = [{
      name     = "model-cache"
      hostPath = { path = "${local.cache.host_path}/${local.cache.sub_path}", type = "Directory" }
    }]
    volumeMounts = [{ name = "model-cache", mountPath = local.cache.mount_path, readOnly = true }]
    startupProbe = {
      httpGet          = { path = "/health", port = 8000 }
      periodSeconds    = local.period
      failureThreshold = local.threshold
    }
    queue = aiplatform_local_queue.serving.name
  }
}
