# The JobSet controller from its upstream OCI chart
# (oci://registry.k8s.io/jobset/charts/jobset), which Kubeflow Trainer runs
# every TrainJob on.
resource "aiplatform_jobset_controller" "this" {
  version = "0.12.0"

  values = <<-EOT
    controller:
      resources:
        requests:
          cpu: 100m
          memory: 128Mi
  EOT
}
