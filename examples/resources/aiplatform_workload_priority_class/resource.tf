# Workloads pick a priority with the label kueue.x-k8s.io/priority-class.
resource "aiplatform_workload_priority_class" "production" {
  name        = "production"
  value       = 10000
  description = "Serving and customer-facing work; preempts research and batch."
}

resource "aiplatform_workload_priority_class" "batch" {
  name        = "batch"
  value       = 100
  description = "Best-effort work that yields to everything else."
}
