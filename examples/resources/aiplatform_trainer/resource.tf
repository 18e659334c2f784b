# Kubeflow Trainer from its upstream OCI chart
# (oci://ghcr.io/kubeflow/charts/kubeflow-trainer), on the JobSet of
# aiplatform_jobset_controller, with the chart's default runtimes
# (torch-distributed, deepspeed-distributed, jax-distributed, ...).
resource "aiplatform_jobset_controller" "this" {
  version = "0.12.0"
}

resource "aiplatform_trainer" "this" {
  version          = "2.3.0"
  default_runtimes = true

  values = <<-EOT
    manager:
      resources:
        requests:
          cpu: 100m
          memory: 128Mi
  EOT

  # JobSet first: the plan checks that the Trainer will find it.
  depends_on = [aiplatform_jobset_controller.this]
}
