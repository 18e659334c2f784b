# The classic Kueue walkthrough on a GPU cluster: one flavor for the GPU
# nodes, a ClusterQueue that admits one GPU's worth of work at a time, and a
# LocalQueue users submit to from the default namespace.
#
#   terraform apply -var kubeconfig=PATH
#
# Then submit batch/v1 Jobs with `suspend: true` and the label
# kueue.x-k8s.io/queue-name: gpu-local-queue: Kueue admits one, holds the next.

terraform {
  required_providers {
    aiplatform = {
      source = "aiplatform/aiplatform"
    }
  }
}

variable "kubeconfig" {
  description = "Path of the kubeconfig of the cluster (make demo passes .testenv/kubeconfig)."
  type        = string
  default     = "~/.kube/config"
}

provider "aiplatform" {
  config_path = var.kubeconfig
}

resource "aiplatform_resource_flavor" "gpu" {
  name = "default-flavor"
}

resource "aiplatform_cluster_queue" "gpu" {
  name = "cluster-queue"
  resource_groups = [{
    covered_resources = ["cpu", "memory", "nvidia.com/gpu"]
    flavors = [{
      name = aiplatform_resource_flavor.gpu.name
      resources = [
        { name = "cpu", nominal_quota = "9" },
        { name = "memory", nominal_quota = "36Gi" },
        { name = "nvidia.com/gpu", nominal_quota = "1" },
      ]
    }]
  }]
}

resource "aiplatform_local_queue" "gpu" {
  name          = "gpu-local-queue"
  namespace     = "default"
  cluster_queue = aiplatform_cluster_queue.gpu.name
}

output "local_queue" {
  description = "Label your Jobs with kueue.x-k8s.io/queue-name = this."
  value       = aiplatform_local_queue.gpu.name
}
