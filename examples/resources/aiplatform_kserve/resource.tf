# KServe from its upstream OCI charts (oci://ghcr.io/kserve/charts:
# kserve-crd as release kserve-crd, kserve-resources as release kserve), in
# Standard mode — Deployments and Services, no Knative or Istio — with the
# webhook certificate issued by the provider (no cert-manager needed).
resource "aiplatform_kserve" "this" {
  version         = "v0.20.0"
  deployment_mode = "Standard"

  controller_requests = {
    cpu    = "100m"
    memory = "300Mi"
  }

  values = <<-EOT
    kserve:
      controller:
        gateway:
          domain: models.example.com
  EOT
}
