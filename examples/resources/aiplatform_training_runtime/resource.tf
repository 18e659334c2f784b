# A torch runtime for two 8-GPU nodes: every TrainJob that names it gets two
# pods (torchrun's rank and master injected by Trainer), admitted by Kueue as
# one gang, with the checkpoint store mounted at /checkpoints and at most three
# restarts of the whole gang.
resource "aiplatform_training_runtime" "torch" {
  name      = "torch-h100"
  framework = "torch"
  num_nodes = 2
  image     = "nvcr.io/nvidia/pytorch:25.01-py3"
  command   = ["torchrun", "/workspace/train.py", "--resume-from", "/checkpoints"]

  resources_per_node = {
    gpus   = 8
    cpu    = "32"
    memory = "512Gi"
  }

  node_selector = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
  tolerations   = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]

  gang = { kueue_queue = "team-a" }

  checkpoint = {
    claim_name = "llama-70b-ckpt" # aiplatform_checkpoint_store.llama.claim_name
    mount_path = "/checkpoints"
  }

  failure_policy = { max_restarts = 3 }

  env        = { NCCL_DEBUG = "WARN" }
  secret_env = [{ name = "HF_TOKEN", secret = "hf", key = "token" }]

  priority_class_name = "training-low"

  template = {
    volumes = [{ name = "dshm", empty_dir = { medium = "Memory" } }]
    pod_template = yamlencode({
      spec = { containers = [{ name = "node", volumeMounts = [{ name = "dshm", mountPath = "/dev/shm" }] }] }
    })
  }
}

# A namespaced TrainingRuntime for one team, on Trainer's MPI policy
# (DeepSpeed): a launcher runs the command, the other nodes run sshd.
resource "aiplatform_training_runtime" "deepspeed" {
  name           = "deepspeed-a100"
  namespace      = "training"
  framework      = "deepspeed"
  num_nodes      = 2
  image          = "ghcr.io/kubeflow/trainer/deepspeed-runtime:latest"
  command        = ["mpirun", "--allow-run-as-root", "python", "/workspace/train.py"]
  procs_per_node = 4

  resources_per_node = { gpus = 4 }
}
