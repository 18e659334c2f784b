# Kueue from its upstream chart (oci://registry.k8s.io/kueue/charts/kueue),
# managing batch Jobs and Kubeflow TrainJobs only: job-level integrations
# coexist with Volcano; pod, deployment and statefulset would not.
resource "aiplatform_kueue" "this" {
  version      = "0.17.0"
  integrations = ["batch/job", "trainer.kubeflow.org/trainjob"]

  wait_for_pods_ready = {
    enable  = true
    timeout = "10m"
  }
  feature_gates = { TopologyAwareScheduling = true }

  # Anything else of the chart, as YAML.
  values = <<-EOT
    controllerManager:
      manager:
        resources:
          requests:
            cpu: 500m
            memory: 512Mi
  EOT
}

output "kueue_drift" {
  description = "Fields of Kueue's objects changed in the cluster since the last apply (empty when none)."
  value       = aiplatform_kueue.this.drift
}
