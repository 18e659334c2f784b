# A helm_release of the Kueue chart adopted by aiplatform_kueue (state
# written by move_test.go).
terraform {
  required_providers {
    aiplatform = { source = "aiplatform/aiplatform" }
  }
}

variable "kubeconfig" { type = string }
variable "chart" { type = string }

provider "aiplatform" {
  config_path = var.kubeconfig
}

moved {
  from = helm_release.kueue
  to   = aiplatform_kueue.this
}

resource "aiplatform_kueue" "this" {
  chart   = { path = var.chart }
  version = "0.17.0"
}
