# A Ray cluster for fine-tuning: a CPU head and one to four 4-GPU workers on
# the L40S pool, scaled by KubeRay's autoscaler. The plan fails if the pool's
# nodes have fewer than 4 allocatable GPUs each.
#
# Production-shaped: Ray's logs on an emptyDir volume mounted in every Ray
# container and shipped by a sidecar, the Hugging Face token from a Secret
# (create `hf-token` with a `token` key first), and workers that request less
# CPU than their limit. The typed attributes (cpu, memory, gpus) fill the Ray
# container; `template` says the rest of each pod.
resource "aiplatform_ray_cluster" "tune" {
  name        = "tune"
  namespace   = "default"
  ray_version = "2.46.0"

  head = {
    cpu              = "2"
    memory           = "8Gi"
    ray_start_params = { dashboard-host = "0.0.0.0" }
    template = {
      containers = [{
        name = "ray-head" # the Ray container: its image comes from ray_version
        ports = [
          { name = "gcs", container_port = 6379 },
          { name = "dashboard", container_port = 8265 },
          { name = "client", container_port = 10001 },
        ]
        volume_mounts = [{ name = "ray-logs", mount_path = "/tmp/ray" }]
      }]
      volumes = [{ name = "ray-logs", empty_dir = {} }]
    }
  }

  worker_groups = [{
    name          = "l40s"
    replicas      = 1
    min_replicas  = 1
    max_replicas  = 4
    memory        = "64Gi"
    gpus          = 4
    node_selector = { "nvidia.com/gpu.product" = "NVIDIA-L40S" }
    tolerations   = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
    template = {
      containers = [
        {
          name     = "ray-worker"
          requests = { cpu = "4" }
          limits   = { cpu = "8" }
          env = [{
            name       = "HF_TOKEN"
            value_from = { secret_key_ref = { name = "hf-token", key = "token" } }
          }]
          volume_mounts = [{ name = "ray-logs", mount_path = "/tmp/ray" }]
        },
        {
          name          = "log-shipper"
          image         = "busybox:1.36"
          args          = ["sh", "-c", "tail -F /tmp/ray/session_latest/logs/raylet.out"]
          volume_mounts = [{ name = "ray-logs", mount_path = "/tmp/ray", read_only = true }]
        },
      ]
      volumes = [{ name = "ray-logs", empty_dir = {} }]
    }
  }]

  autoscaling = {
    enabled      = true
    idle_timeout = "5m"
  }
}

output "ray_dashboard" {
  description = "Where to submit Ray jobs from inside the cluster."
  value       = aiplatform_ray_cluster.tune.dashboard_address
}
