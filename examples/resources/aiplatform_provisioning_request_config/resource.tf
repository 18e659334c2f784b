# How Kueue asks the cluster autoscaler for nodes before it admits a workload:
# all-or-nothing scale-up, retried twice, and pods steered onto the nodes the
# request provisioned.
resource "aiplatform_provisioning_request_config" "atomic" {
  name                    = "atomic-scale-up"
  provisioning_class_name = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
  managed_resources       = ["nvidia.com/gpu"]
  parameters              = { ValidUntilSeconds = "600" }
  retry_strategy = {
    backoff_limit_count  = 2
    backoff_base_seconds = 120
    backoff_max_seconds  = 900
  }
  pod_set_updates = {
    node_selector = [
      { key = "autoscaling.x-k8s.io/provisioning-request", value_from_provisioning_class_detail = "ProvisioningRequestName" },
    ]
  }
}
