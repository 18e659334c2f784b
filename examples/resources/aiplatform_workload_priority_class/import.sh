# A WorkloadPriorityClass is cluster-scoped: import it by name.
terraform import aiplatform_workload_priority_class.production production
