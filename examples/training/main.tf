# Distributed training that survives preemption, on one 8-GPU node pool:
#
#   - the controllers: Kueue (admits whole TrainJobs against quota), JobSet
#     (runs the group of Jobs a TrainJob becomes) and Kubeflow Trainer;
#   - the pool's GPUs as one Kueue flavor, a ClusterQueue whose quota is every
#     allocatable GPU of the pool, and a LocalQueue data scientists submit to;
#   - two priorities: short jobs (evaluation, interactive) preempt long training;
#   - a checkpoint store (a ReadWriteMany claim, kept by destroy, backed up);
#   - a torch runtime: 2 nodes x 8 GPUs, admitted as one gang through the queue,
#     the checkpoint claim mounted at /checkpoints, at most 3 restarts.
#
# Data scientists then submit small TrainJobs that name the runtime (see the
# `trainjob` output). Why each part is there, with the numbers:
# docs/guides/training-survives-preemption.md.
#
#   terraform apply -var kubeconfig=PATH
#
# Offline (or on `make cluster-up`, whose cluster has no controllers yet) give
# local chart directories: -var kueue_chart_path=… -var jobset_chart_path=…
# -var trainer_chart_path=… (charts/ of each module in the Go module cache).
# On a cluster that already runs the three controllers, with Kueue's
# trainer.kubeflow.org/trainjob and batch/job integrations on, set
# -var install_controllers=false: the rest is the same.

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
  description = "Existing namespace of the training jobs: the LocalQueue, the checkpoint claim and the runtime live there."
  type        = string
  default     = "default"
}

variable "gpu_product" {
  description = "nvidia.com/gpu.product of the pool's nodes (8 GPUs each)."
  type        = string
  default     = "NVIDIA-H100-80GB-HBM3"
}

variable "install_controllers" {
  description = "Install Kueue, JobSet and Kubeflow Trainer. False when the cluster already runs them."
  type        = bool
  default     = true
}

variable "kueue_chart_path" {
  description = "A local copy of Kueue's chart; null installs the upstream OCI chart."
  type        = string
  default     = null
}

variable "jobset_chart_path" {
  description = "A local copy of JobSet's chart (charts/jobset); null installs the upstream OCI chart."
  type        = string
  default     = null
}

variable "trainer_chart_path" {
  description = "A local copy of Kubeflow Trainer's chart (charts/kubeflow-trainer); null installs the upstream OCI chart."
  type        = string
  default     = null
}

provider "aiplatform" {
  config_path = var.kubeconfig
}

# --- the controllers -------------------------------------------------------

resource "aiplatform_jobset_controller" "this" {
  count   = var.install_controllers ? 1 : 0
  version = "0.12.0"
  chart   = var.jobset_chart_path == null ? null : { path = var.jobset_chart_path }
}

# Trainer's chart would pull JobSet's chart as a dependency from an OCI
# registry; JobSet is the release above instead. Its default runtimes are not
# installed: the platform's runtime is the one below.
resource "aiplatform_trainer" "this" {
  count            = var.install_controllers ? 1 : 0
  version          = "2.3.0"
  chart            = var.trainer_chart_path == null ? null : { path = var.trainer_chart_path }
  default_runtimes = false
  depends_on       = [aiplatform_jobset_controller.this]
}

# Kueue starts after Trainer: its TrainJob integration needs Trainer's CRDs
# when the manager starts. wait_for_pods_ready evicts and requeues a gang
# whose pods are not all running within 10 minutes, so a half-started job
# never holds GPUs for long.
resource "aiplatform_kueue" "this" {
  count        = var.install_controllers ? 1 : 0
  version      = "0.17.0"
  chart        = var.kueue_chart_path == null ? null : { path = var.kueue_chart_path }
  integrations = ["batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob"]
  wait_for_pods_ready = {
    enable  = true
    timeout = "10m"
  }
  depends_on = [aiplatform_trainer.this]
}

# --- the pool and its queue ---------------------------------------------------

# Every node of the product gets the pool's label; the plan shows nodes
# joining or leaving. (GPU nodes of a cloud pool usually also carry a
# nvidia.com/gpu NoSchedule taint: the flavor and the runtime tolerate it.)
resource "aiplatform_gpu_node_pool" "train" {
  name      = "train-h100"
  selector  = { "nvidia.com/gpu.product" = var.gpu_product }
  labels    = { "example.com/pool" = "train-h100" }
  min_nodes = 2
}

locals {
  gpu_toleration = { key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }
}

resource "aiplatform_resource_flavor" "train" {
  name        = "train-h100"
  node_labels = aiplatform_gpu_node_pool.train.labels
  tolerations = [local.gpu_toleration]
  depends_on  = [aiplatform_kueue.this]
}

# Long training is preemptible; short jobs are not, and win.
resource "aiplatform_workload_priority_class" "training" {
  name        = "training-long"
  value       = 100
  description = "Multi-day training: checkpoints every 30 minutes and yields to short jobs."
  depends_on  = [aiplatform_kueue.this]
}

resource "aiplatform_workload_priority_class" "short" {
  name        = "short"
  value       = 1000
  description = "Evaluation and interactive jobs of under an hour: preempt training."
  depends_on  = [aiplatform_kueue.this]
}

# Quota = every allocatable GPU (and CPU, memory) of the pool, recomputed at
# each plan. A pending workload may evict lower-priority ones of this queue.
resource "aiplatform_cluster_queue" "training" {
  name       = "training"
  preemption = { within_cluster_queue = "LowerPriority" }
  resource_groups = [{
    covered_resources = ["cpu", "memory", "nvidia.com/gpu"]
    flavors = [{
      name = aiplatform_resource_flavor.train.name
      resources = [
        { name = "cpu", from_allocatable = { node_selector = aiplatform_gpu_node_pool.train.selector } },
        { name = "memory", from_allocatable = { node_selector = aiplatform_gpu_node_pool.train.selector } },
        { name = "nvidia.com/gpu", from_allocatable = { node_selector = aiplatform_gpu_node_pool.train.selector } },
      ]
    }]
  }]
}

resource "aiplatform_local_queue" "training" {
  name          = "training"
  namespace     = var.namespace
  cluster_queue = aiplatform_cluster_queue.training.name
}

# --- checkpoints --------------------------------------------------------------

# Every node of a job writes its shard here. Destroy keeps the claim (and
# says so); a CronJob copies it every 6 hours into <name>-backup, keeping 4.
resource "aiplatform_checkpoint_store" "llm" {
  name      = "llm-checkpoints"
  namespace = var.namespace
  size      = "2Ti"
  backup = {
    schedule  = "0 */6 * * *"
    retention = 4
  }
}

# --- the runtime ----------------------------------------------------------------

# A namespaced TrainingRuntime, in the claim's namespace: a claim is mounted
# only by pods of its own namespace. 2 nodes x 8 GPUs = 16 GPUs, admitted by
# Kueue all at once or not at all; a failed pod fails its Job (restartPolicy
# Never, backoffLimit 0) and JobSet restarts the whole group, at most 3 times,
# from the latest checkpoint in $CHECKPOINT_DIR.
resource "aiplatform_training_runtime" "torch" {
  name      = "torch-h100"
  namespace = var.namespace
  framework = "torch"
  num_nodes = 2
  image     = "nvcr.io/nvidia/pytorch:25.01-py3"
  command   = ["torchrun", "/workspace/train.py", "--resume-from-latest"]

  resources_per_node = {
    gpus   = 8
    cpu    = "16"
    memory = "128Gi"
  }

  node_selector = aiplatform_gpu_node_pool.train.selector
  tolerations   = [local.gpu_toleration]

  # Kueue admits the TrainJob's pods together. The plan checks the 16 GPUs
  # against the queue's quota, the flavor's nodes and Kueue's integrations as
  # this configuration plans them, on the first apply too: the reference to
  # the LocalQueue (which references the ClusterQueue, the flavor and the
  # pool) makes Terraform plan them before the runtime.
  gang = {
    kueue_queue = aiplatform_local_queue.training.name
  }

  checkpoint = {
    claim_name = aiplatform_checkpoint_store.llm.claim_name
    mount_path = aiplatform_checkpoint_store.llm.mount_path
    env        = "CHECKPOINT_DIR"
  }

  failure_policy = {
    max_restarts = 3
  }

  env = {
    NCCL_DEBUG = "WARN"
  }
}

output "runtime" {
  description = "The runtime TrainJobs name, and the GPUs one job of it takes."
  value = {
    name       = aiplatform_training_runtime.torch.name
    kind       = aiplatform_training_runtime.torch.kind
    gpus_total = aiplatform_training_runtime.torch.gpus_total
  }
}

output "checkpoint_claim" {
  description = "The claim that holds the checkpoints (kept by terraform destroy)."
  value       = aiplatform_checkpoint_store.llm.claim_name
}

output "trainjob" {
  description = "What a data scientist submits (kubectl apply -f -)."
  value       = <<-EOT
    apiVersion: trainer.kubeflow.org/v1alpha1
    kind: TrainJob
    metadata:
      name: llm-pretrain
      namespace: ${var.namespace}
      labels:
        kueue.x-k8s.io/queue-name: ${aiplatform_local_queue.training.name}
        kueue.x-k8s.io/priority-class: ${aiplatform_workload_priority_class.training.name}
    spec:
      runtimeRef:
        name: ${aiplatform_training_runtime.torch.name}
        kind: TrainingRuntime
      # Trainer v2.3.0 injects PET_NNODES, PET_NODE_RANK and PET_MASTER_ADDR/PORT
      # only when spec.trainer is present: without it the ranks never form one job.
      trainer:
        numNodes: ${aiplatform_training_runtime.torch.num_nodes}
  EOT
}
