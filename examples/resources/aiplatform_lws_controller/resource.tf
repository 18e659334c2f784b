# The LeaderWorkerSet controller from its upstream OCI chart
# (oci://registry.k8s.io/lws/charts/lws), for multi-node inference groups.
resource "aiplatform_lws_controller" "this" {
  version = "0.9.0"

  values = <<-EOT
    resources:
      requests:
        cpu: 100m
        memory: 256Mi
  EOT
}
