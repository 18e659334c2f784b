# The KubeRay operator from its upstream chart repository
# (https://ray-project.github.io/kuberay-helm/, chart kuberay-operator).
resource "aiplatform_kuberay_operator" "this" {
  version = "1.6.2"

  # Anything of the chart, as YAML.
  values = <<-EOT
    resources:
      requests:
        cpu: 100m
        memory: 512Mi
  EOT
}

output "kuberay_drift" {
  description = "Fields of the operator's objects changed in the cluster since the last apply (empty when none)."
  value       = aiplatform_kuberay_operator.this.drift
}
