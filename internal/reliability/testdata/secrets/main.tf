# Credentials passed the way CI robots pass them: host, token and CA as
# variables (TF_VAR_…), a client key that is not even needed, and an exec
# block environment. None of them may reach the log or the state.
terraform {
  required_providers {
    aiplatform = { source = "aiplatform/aiplatform" }
  }
}

variable "kubeconfig" { type = string }
variable "host" { type = string }
variable "ca" { type = string }
variable "token" {
  type      = string
  sensitive = true
}

provider "aiplatform" {
  host                   = var.host
  token                  = var.token
  cluster_ca_certificate = var.ca
}

resource "aiplatform_workload_priority_class" "secret_check" {
  name  = "secret-check"
  value = 3
}
