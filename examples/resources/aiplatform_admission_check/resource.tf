# Admit GPU workloads only once the cluster autoscaler has confirmed capacity
# for them (a ProvisioningRequest per workload).
resource "aiplatform_provisioning_request_config" "gpu" {
  name                    = "gpu-capacity"
  provisioning_class_name = "check-capacity.autoscaling.x-k8s.io"
  managed_resources       = ["nvidia.com/gpu"]
}

resource "aiplatform_admission_check" "gpu_capacity" {
  name            = "gpu-capacity"
  controller_name = "kueue.x-k8s.io/provisioning-request"
  parameters = {
    api_group = "kueue.x-k8s.io"
    kind      = "ProvisioningRequestConfig"
    name      = aiplatform_provisioning_request_config.gpu.name
  }
}

# A queue runs the check for the flavors it applies to.
resource "aiplatform_cluster_queue" "autoscaled" {
  name = "autoscaled"
  admission_checks_strategy = [
    { name = aiplatform_admission_check.gpu_capacity.name, on_flavors = ["h100-spot"] },
  ]
  resource_groups = [{
    covered_resources = ["nvidia.com/gpu"]
    flavors = [
      { name = "h100", resources = [{ name = "nvidia.com/gpu", nominal_quota = "16" }] },
      { name = "h100-spot", resources = [{ name = "nvidia.com/gpu", nominal_quota = "32" }] },
    ]
  }]
}
