# A Ray cluster for fine-tuning: a CPU head and one to four 4-GPU workers on
# the L40S pool, scaled by KubeRay's autoscaler. The plan fails if the pool's
# nodes have fewer than 4 allocatable GPUs each.
resource "aiplatform_ray_cluster" "tune" {
  name        = "tune"
  namespace   = "default"
  ray_version = "2.46.0"

  head = {
    cpu              = "2"
    memory           = "8Gi"
    ray_start_params = { dashboard-host = "0.0.0.0" }
  }

  worker_groups = [{
    name          = "l40s"
    replicas      = 1
    min_replicas  = 1
    max_replicas  = 4
    cpu           = "8"
    memory        = "64Gi"
    gpus          = 4
    node_selector = { "nvidia.com/gpu.product" = "NVIDIA-L40S" }
    tolerations   = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
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
