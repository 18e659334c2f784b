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
# ephemeral (Terraform >= 1.10), not only sensitive: a saved plan records the
# values of input variables, sensitive ones included, and `terraform show
# -json` prints them under "variables" (found by this audit). An ephemeral
# variable is neither in the plan nor in the state; it is given again at
# apply (here by TF_VAR_token).
variable "token" {
  type      = string
  sensitive = true
  ephemeral = true
}

provider "aiplatform" {
  host                   = var.host
  token                  = var.token
  cluster_ca_certificate = var.ca
}
