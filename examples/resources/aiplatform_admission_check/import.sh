# An AdmissionCheck is cluster-scoped: import it by name.
terraform import aiplatform_admission_check.gpu_capacity gpu-capacity
