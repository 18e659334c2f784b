# An LLM served by Ray Serve: KubeRay runs the application below on a
# RayCluster it creates from head and worker_groups (the same attributes as
# aiplatform_ray_cluster), and on a change of the cluster starts an upgraded
# cluster and switches traffic to it once its application is healthy. The
# plan fails if serve_config is not a Serve config or if the L40S pool's
# nodes have fewer than 4 allocatable GPUs each.
resource "aiplatform_ray_service" "llm" {
  name        = "llm"
  namespace   = "default"
  ray_version = "2.46.0"

  serve_config = yamlencode({
    applications = [{
      name         = "llm"
      import_path  = "ray.serve.llm:build_openai_app"
      route_prefix = "/"
      args = {
        llm_configs = [{
          model_loading_config = { model_id = "qwen-0.5b", model_source = "Qwen/Qwen2.5-0.5B-Instruct" }
          deployment_config    = { autoscaling_config = { min_replicas = 1, max_replicas = 2 } }
          accelerator_type     = "L40S"
        }]
      }
    }]
  })

  head = {
    cpu              = "2"
    memory           = "8Gi"
    ray_start_params = { dashboard-host = "0.0.0.0", num-gpus = "0" }
  }

  worker_groups = [{
    name          = "l40s"
    replicas      = 1
    min_replicas  = 1
    max_replicas  = 2
    cpu           = "8"
    memory        = "64Gi"
    gpus          = 4
    node_selector = { "nvidia.com/gpu.product" = "NVIDIA-L40S" }
    tolerations   = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  }]

  upgrade_strategy               = { type = "NewCluster" }
  cluster_deletion_delay_seconds = 120
  initializing_timeout           = "30m"
}

output "serve_service" {
  description = "Send requests to this Service (port 8000) once the application is healthy."
  value       = aiplatform_ray_service.llm.serve_service_name
}
