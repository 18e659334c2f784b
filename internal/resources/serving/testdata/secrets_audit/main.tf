# Every credential-bearing input the provider has, in one configuration
# (secrets_audit_test.go adds the resources): the provider's token as a
# sensitive variable, and Secret references where a workload needs one. No
# Secret value may reach the state or the plan.
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
