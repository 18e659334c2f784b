# Check the fabric before training on it: nccl-tests' all_reduce_perf across
# every node of the H100 pool, through an MPIJob of the MPI Operator, judged
# against the NICs' peak (nics_per_node × nic_gbps ÷ 8 GB/s). The training
# runtime depends on the check, so a bad fabric fails the apply before any
# team can submit a job to it — and a node joining the pool re-runs the check
# at the next apply. The arithmetic and the checklist a bad run prints:
# docs/guides/fabric-check.md.
#
# Needs Kubeflow Trainer (and JobSet) for the runtime: examples/training
# installs them.
#
#   terraform apply -var kubeconfig=PATH
#
# Offline, give the MPI Operator's manifest file from its module:
# -var mpi_operator_manifest_path=…/github.com/kubeflow/mpi-operator@v0.8.2/deploy/v2beta1/mpi-operator.yaml

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

variable "gpu_product" {
  description = "nvidia.com/gpu.product of the pool's nodes (8 GPUs each)."
  type        = string
  default     = "NVIDIA-H100-80GB-HBM3"
}

variable "nics_per_node" {
  description = "NICs per node on the GPU (compute) fabric."
  type        = number
  default     = 8
}

variable "nic_gbps" {
  description = "Port speed of each of those NICs, Gb/s."
  type        = number
  default     = 400
}

variable "nccl_command" {
  description = "The check's launcher command; null runs the default mpirun of all_reduce_perf."
  type        = list(string)
  default     = null
}

variable "mpi_operator_manifest_path" {
  description = "A local copy of the MPI Operator's manifest file; null downloads the release's file."
  type        = string
  default     = null
}

provider "aiplatform" {
  config_path = var.kubeconfig
}

resource "aiplatform_mpi_operator" "this" {
  version   = "v0.8.2"
  manifests = var.mpi_operator_manifest_path == null ? null : { path = var.mpi_operator_manifest_path }
}

resource "aiplatform_gpu_node_pool" "h100" {
  name      = "fabric-h100"
  selector  = { "nvidia.com/gpu.product" = var.gpu_product }
  min_nodes = 2
}

# One rank per GPU on every Ready node of the pool. With 8 × 400 Gb/s NICs
# the peak is 400 GB/s: good from 360, acceptable from 320, and anything
# lower (or a single wrong value) fails the apply with the checklist.
resource "aiplatform_nccl_check" "h100" {
  name          = "h100-fabric"
  namespace     = "default"
  node_selector = aiplatform_gpu_node_pool.h100.selector
  gpus_per_node = 8
  nics_per_node = var.nics_per_node
  nic_gbps      = var.nic_gbps
  command       = var.nccl_command

  env = {
    NCCL_DEBUG        = "INFO" # records which transport NCCL used (IB, RoCE, Socket)
    NCCL_DEBUG_SUBSYS = "INIT,NET"
  }

  fail_on = "bad"
  timeout = "30m"

  depends_on = [aiplatform_mpi_operator.this]
}

# The runtime teams train with exists only once the fabric passed.
resource "aiplatform_training_runtime" "torch" {
  name      = "torch-h100-checked"
  framework = "torch"
  num_nodes = 2
  image     = "nvcr.io/nvidia/pytorch:25.01-py3"
  command   = ["torchrun", "/workspace/train.py"]

  resources_per_node = { gpus = 8 }
  node_selector      = aiplatform_gpu_node_pool.h100.selector
  failure_policy     = { max_restarts = 3 }

  depends_on = [aiplatform_nccl_check.h100]
}

output "fabric" {
  description = "The check's verdict and numbers."
  value = {
    verdict    = aiplatform_nccl_check.h100.verdict
    busbw_gbps = aiplatform_nccl_check.h100.busbw_gbps
    peak_gbps  = aiplatform_nccl_check.h100.peak_busbw_gbps
    ratio      = aiplatform_nccl_check.h100.ratio
    transport  = aiplatform_nccl_check.h100.transport
    nodes      = aiplatform_nccl_check.h100.nodes_tested
  }
}
