# MultiKueue: one manager cluster holds the queues, a worker cluster runs the
# workloads. A Job submitted to the manager's LocalQueue "research" is
# dispatched by Kueue to the worker (a copy of the Job runs there, on the
# worker's GPUs) and its status comes back to the manager's Job.
#
# The worker has the same queue names as the manager: MultiKueue submits each
# workload's copy under the same queue. The manager reaches the worker with a
# kubeconfig stored in a Secret in kueue-system; the provider writes it from
# the write-only kubeconfig_wo, so it never lands in Terraform's state.
#
#   terraform apply -var kubeconfig=MANAGER_KUBECONFIG -var worker_kubeconfig=WORKER_KUBECONFIG

terraform {
  required_version = ">= 1.11" # write-only attributes
  required_providers {
    aiplatform = {
      source = "aiplatform/aiplatform"
    }
  }
}

variable "kubeconfig" {
  description = "Path of the manager cluster's kubeconfig."
  type        = string
  default     = "~/.kube/config"
}

variable "worker_kubeconfig" {
  description = "Path of the worker cluster's kubeconfig, with its credentials inline (certificate-authority-data and a token): the Kueue manager reads it from a Secret, not from this machine."
  type        = string
}

provider "aiplatform" {
  config_path = var.kubeconfig
}

provider "aiplatform" {
  alias       = "worker"
  config_path = var.worker_kubeconfig
}

locals {
  gpu_product = "NVIDIA-H100-80GB-HBM3"
  queue       = "research"
  namespace   = "default"
}

# --- the worker: quota where the GPUs are -----------------------------------

resource "aiplatform_resource_flavor" "worker_h100" {
  provider    = aiplatform.worker
  name        = "h100"
  node_labels = { "nvidia.com/gpu.product" = local.gpu_product }
}

resource "aiplatform_cluster_queue" "worker" {
  provider = aiplatform.worker
  name     = local.queue
  resource_groups = [{
    covered_resources = ["nvidia.com/gpu"]
    flavors           = [{ name = aiplatform_resource_flavor.worker_h100.name, resources = [{ name = "nvidia.com/gpu", nominal_quota = "8" }] }]
  }]
}

resource "aiplatform_local_queue" "worker" {
  provider      = aiplatform.worker
  name          = local.queue
  namespace     = local.namespace
  cluster_queue = aiplatform_cluster_queue.worker.name
}

# --- the manager: the queues users submit to, dispatching to the worker -----

resource "aiplatform_multikueue_cluster" "worker" {
  name              = "worker-1"
  kubeconfig_secret = "worker-1-kubeconfig"
  kubeconfig_wo     = file(var.worker_kubeconfig)
  # The worker's queues first: the plan checks that the worker has them.
  depends_on = [aiplatform_local_queue.worker]
}

resource "aiplatform_multikueue_config" "workers" {
  name     = "workers"
  clusters = [aiplatform_multikueue_cluster.worker.name]
}

resource "aiplatform_admission_check" "multikueue" {
  name            = "multikueue"
  controller_name = "kueue.x-k8s.io/multikueue"
  parameters = {
    api_group = "kueue.x-k8s.io"
    kind      = "MultiKueueConfig"
    name      = aiplatform_multikueue_config.workers.name
  }
}

# The manager admits against the same quota as the worker, then dispatches.
# (The plan warns that the manager has no nodes with these GPUs: they are the
# worker's.)
resource "aiplatform_resource_flavor" "manager_h100" {
  name = "h100"
}

resource "aiplatform_cluster_queue" "research" {
  name                      = local.queue
  admission_checks_strategy = [{ name = aiplatform_admission_check.multikueue.name }]
  resource_groups = [{
    covered_resources = ["nvidia.com/gpu"]
    flavors           = [{ name = aiplatform_resource_flavor.manager_h100.name, resources = [{ name = "nvidia.com/gpu", nominal_quota = "8" }] }]
  }]
}

resource "aiplatform_local_queue" "research" {
  name          = local.queue
  namespace     = local.namespace
  cluster_queue = aiplatform_cluster_queue.research.name
}

output "worker_active" {
  description = "Whether the Kueue manager reaches the worker (the MultiKueueCluster's Active condition)."
  value       = aiplatform_multikueue_cluster.worker.active
}
