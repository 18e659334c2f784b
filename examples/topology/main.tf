# Topology-aware scheduling (TAS) for a GPU pool: Kueue places a job's pods on
# nodes close together — one block or one rack — so that a 16-GPU training
# job lands on two whole 8-GPU nodes behind the same switch instead of being
# spread over the datacenter.
#
#   terraform apply -var kubeconfig=PATH
#
# The nodes carry the labels of their place (cloud providers set them, or
# aiplatform_gpu_node_pool does), widest domain first:
#   cloud.example.com/topology-block, cloud.example.com/topology-rack,
#   kubernetes.io/hostname
# Then submit a Job to the LocalQueue `training` with the pod template
# annotation
#   kueue.x-k8s.io/podset-required-topology: cloud.example.com/topology-block
# (all pods in one block) or podset-preferred-topology (as close as it fits).

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

variable "block_label" {
  description = "Node label naming a node's block (the widest domain)."
  type        = string
  default     = "cloud.example.com/topology-block"
}

variable "rack_label" {
  description = "Node label naming a node's rack within its block."
  type        = string
  default     = "cloud.example.com/topology-rack"
}

variable "gpu_product" {
  description = "nvidia.com/gpu.product of the pool's nodes."
  type        = string
  default     = "NVIDIA-H100-80GB-HBM3"
}

provider "aiplatform" {
  config_path = var.kubeconfig
}

# The levels, widest first; the hostname level, when present, is the last.
# Changing the levels replaces the Topology (Kueue does not allow editing them).
resource "aiplatform_topology" "datacenter" {
  name   = "datacenter"
  levels = [var.block_label, var.rack_label, "kubernetes.io/hostname"]
}

# The pool's flavor names the topology. The plan warns about nodes of the pool
# that lack one of the level labels: Kueue cannot place workloads on them.
resource "aiplatform_resource_flavor" "h100_tas" {
  name          = "h100-tas"
  node_labels   = { "nvidia.com/gpu.product" = var.gpu_product }
  topology_name = aiplatform_topology.datacenter.name
}

resource "aiplatform_cluster_queue" "training" {
  name = "training"
  resource_groups = [{
    covered_resources = ["nvidia.com/gpu"]
    flavors = [{
      name      = aiplatform_resource_flavor.h100_tas.name
      resources = [{ name = "nvidia.com/gpu", nominal_quota = "24" }]
    }]
  }]
}

resource "aiplatform_local_queue" "training" {
  name          = "training"
  namespace     = "default"
  cluster_queue = aiplatform_cluster_queue.training.name
}
