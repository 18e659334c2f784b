# The workers a MultiKueue admission check dispatches to.
resource "aiplatform_multikueue_config" "workers" {
  name     = "gpu-workers"
  clusters = ["worker-eu-1", "worker-us-1"]
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
