# Ray clusters that Kueue admits as a whole: a queue whose GPU quota follows
# the L40S pool's allocatable GPUs, and a training cluster submitted to it.
# While the pool lacks room for every pod, Kueue keeps the cluster suspended
# (no pods at all, so no half-started cluster holds GPUs); when it fits, Kueue
# admits it and KubeRay starts the head and the workers.
#
# Needs KubeRay (aiplatform_kuberay_operator) and Kueue with the
# ray.io/raycluster integration, e.g.
#   resource "aiplatform_kueue" "this" { integrations = ["batch/job", "ray.io/raycluster"] }
#
#   terraform apply -var kubeconfig=PATH

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

provider "aiplatform" {
  config_path = var.kubeconfig
}

locals {
  pool = { "nvidia.com/gpu.product" = "NVIDIA-L40S" }
}

resource "aiplatform_resource_flavor" "l40s" {
  name        = "l40s"
  node_labels = local.pool
}

resource "aiplatform_cluster_queue" "ray" {
  name = "ray"
  resource_groups = [{
    covered_resources = ["cpu", "memory", "nvidia.com/gpu"]
    flavors = [{
      name = aiplatform_resource_flavor.l40s.name
      resources = [
        { name = "cpu", nominal_quota = "64" },
        { name = "memory", nominal_quota = "512Gi" },
        # Every GPU of the pool: the plan shows the quota change when nodes join or leave.
        { name = "nvidia.com/gpu", from_allocatable = { node_selector = local.pool } },
      ]
    }]
  }]
}

resource "aiplatform_local_queue" "ray" {
  name          = "ray"
  namespace     = "default"
  cluster_queue = aiplatform_cluster_queue.ray.name
}

resource "aiplatform_ray_cluster" "train" {
  name        = "train"
  namespace   = aiplatform_local_queue.ray.namespace
  ray_version = "2.46.0"
  queue_name  = aiplatform_local_queue.ray.name

  head = {
    cpu    = "2"
    memory = "8Gi"
  }

  # Kueue admits a fixed size: min = replicas = max, no autoscaling.
  worker_groups = [{
    name          = "l40s"
    replicas      = 2
    min_replicas  = 2
    max_replicas  = 2
    cpu           = "8"
    memory        = "64Gi"
    gpus          = 4
    node_selector = local.pool
  }]
}

output "ray_client" {
  description = "ray.init() address for clients inside the cluster."
  value       = aiplatform_ray_cluster.train.client_address
}
