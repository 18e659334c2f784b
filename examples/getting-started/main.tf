# The getting-started guide's configuration (docs/guides/getting-started.md):
# one GPU flavor, a ClusterQueue whose GPU quota follows the nodes, and a
# LocalQueue to submit to. internal/release's TestGettingStarted installs the
# released provider from a filesystem mirror and runs the guide's steps on it.

terraform {
  required_version = ">= 1.5"
  required_providers {
    aiplatform = {
      source  = "aiplatform/aiplatform"
      version = "~> 0.1"
    }
  }
}

variable "kubeconfig" {
  description = "Path of the kubeconfig of the cluster (read only because it is named here)."
  type        = string
  default     = "~/.kube/config"
}

variable "gpu_product" {
  description = "The nvidia.com/gpu.product label of the GPU nodes the queue gets."
  type        = string
  default     = "NVIDIA-H100-80GB-HBM3"
}

variable "force_conflicts" {
  description = "Take back fields someone changed by hand (kubectl edit) instead of failing the plan with their field manager's name."
  type        = bool
  default     = false
}

provider "aiplatform" {
  config_path     = var.kubeconfig
  force_conflicts = var.force_conflicts
}

# What the nodes have, read at every plan: nothing is created by a data source.
data "aiplatform_gpu_capacity" "pool" {
  node_selector = { "nvidia.com/gpu.product" = var.gpu_product }
}

resource "aiplatform_resource_flavor" "gpu" {
  name        = "gpu"
  node_labels = { "nvidia.com/gpu.product" = var.gpu_product }
}

# The team's quota: a fixed CPU and memory budget, and every GPU of the
# flavor's nodes, computed at each plan from what the nodes report allocatable.
resource "aiplatform_cluster_queue" "team_a" {
  name = "team-a"
  resource_groups = [{
    covered_resources = ["cpu", "memory", "nvidia.com/gpu"]
    flavors = [{
      name = aiplatform_resource_flavor.gpu.name
      resources = [
        { name = "cpu", nominal_quota = "64" },
        { name = "memory", nominal_quota = "512Gi" },
        { name = "nvidia.com/gpu", from_allocatable = { node_selector = aiplatform_resource_flavor.gpu.node_labels } },
      ]
    }]
  }]
}

resource "aiplatform_local_queue" "team_a" {
  name          = "team-a"
  namespace     = "default"
  cluster_queue = aiplatform_cluster_queue.team_a.name
}

output "gpus_allocatable" {
  description = "GPUs of the Ready, schedulable nodes of the pool."
  value       = data.aiplatform_gpu_capacity.pool.allocatable_total
}

output "gpu_quota" {
  description = "The queue's GPU quota, as planned from the live nodes."
  value       = aiplatform_cluster_queue.team_a.resource_groups[0].flavors[0].resources[2].nominal_quota
}

output "local_queue" {
  description = "Label Jobs with kueue.x-k8s.io/queue-name = this to submit them to the queue."
  value       = aiplatform_local_queue.team_a.name
}
