# Kueue from its upstream chart (oci://registry.k8s.io/kueue/charts/kueue),
# managing batch Jobs and Kubeflow TrainJobs only: job-level integrations
# coexist with Volcano; pod, deployment and statefulset would not.
resource "aiplatform_kueue" "this" {
  version      = "0.19.2"
  integrations = ["batch/job", "trainer.kubeflow.org/trainjob"]

  # Kueue 0.19 waits for pods ready by default (30m); here 10m, requeued
  # with a backoff and given up after 5 attempts.
  wait_for_pods_ready = {
    enable             = true
    timeout            = "10m"
    requeuing_strategy = { backoff_limit_count = 5, backoff_base_seconds = 60 }
  }
  # Fair sharing between the ClusterQueues of a cohort.
  fair_sharing  = { preemption_strategies = ["LessThanOrEqualToFinalShare", "LessThanInitialShare"] }
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
