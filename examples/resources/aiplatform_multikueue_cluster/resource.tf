# A worker cluster of a MultiKueue manager. The provider stores the
# kubeconfig (write-only: never in plan or state) in the Secret
# kueue-system/worker-eu-1-kubeconfig, which the Kueue manager reads.
variable "worker_kubeconfig" {
  description = "The worker's kubeconfig (YAML) with inline credentials, e.g. a service account token."
  type        = string
  sensitive   = true
}

resource "aiplatform_multikueue_cluster" "eu_1" {
  name              = "worker-eu-1"
  kubeconfig_secret = "worker-eu-1-kubeconfig"
  kubeconfig_wo     = var.worker_kubeconfig
}

# Or a Secret managed elsewhere (key "kubeconfig" in kueue-system):
resource "aiplatform_multikueue_cluster" "us_1" {
  name              = "worker-us-1"
  kubeconfig_secret = "worker-us-1-kubeconfig"
}
