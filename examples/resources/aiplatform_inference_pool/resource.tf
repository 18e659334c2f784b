# An InferencePool over the pods of the model deployment "llama-8b" (see
# aiplatform_model_deployment's example), routed by the Gateway API
# Inference Extension's endpoint picker. The plan compares the selector with
# the live Deployment's pod labels (aiplatform_model_deployment labels its
# pods aiplatform.io/model-deployment = <name>) and refuses a mismatch with
# both label sets; it warns while no pod matches. The picker — a Deployment,
# Service, ServiceAccount and a Role that reads pods and inferencepools, all
# named llama-8b-epp and owned by the pool — must be Ready (it has read the
# pool and its pods) within the create timeout.
resource "aiplatform_inference_pool" "llama" {
  name         = "llama-8b"
  namespace    = "default"
  selector     = { "aiplatform.io/model-deployment" = "llama-8b" }
  target_ports = [8000]

  serving_group = {
    kind = "Deployment"
    name = "llama-8b" # aiplatform_model_deployment.llama.name
  }

  # The gateway answers with an error while the picker is down.
  failure_mode = "FailClose"

  picker_replicas  = 1
  picker_log_level = 4 # logs each pod the picker adds when it reads the pool
  picker_template = {
    containers = [{ name = "epp", requests = { cpu = "100m", memory = "128Mi" }, limits = { memory = "512Mi" } }]
  }

  timeouts {
    create = "5m"
  }
}
