# kubernetes_manifest resources adopted by the aiplatform resources of their
# kinds (state written by move_test.go).
terraform {
  required_providers {
    aiplatform = { source = "aiplatform/aiplatform" }
  }
}

variable "kubeconfig" { type = string }

provider "aiplatform" {
  config_path = var.kubeconfig
}

moved {
  from = kubernetes_manifest.wpc
  to   = aiplatform_workload_priority_class.high
}

moved {
  from = kubernetes_manifest.rf
  to   = aiplatform_resource_flavor.rf
}

moved {
  from = kubernetes_manifest.cohort
  to   = aiplatform_cohort.ai
}

moved {
  from = kubernetes_manifest.cq
  to   = aiplatform_cluster_queue.cq
}

moved {
  from = kubernetes_manifest.lq
  to   = aiplatform_local_queue.lq
}

resource "aiplatform_workload_priority_class" "high" {
  name        = "moved-high"
  value       = 1000
  description = "moved"
}

resource "aiplatform_resource_flavor" "rf" {
  name        = "moved-rf"
  node_labels = { testpool = "cq" }
}

resource "aiplatform_cohort" "ai" {
  name = "moved-cohort"
}

resource "aiplatform_cluster_queue" "cq" {
  name   = "moved-cq"
  cohort = aiplatform_cohort.ai.name
  resource_groups = [{
    covered_resources = ["nvidia.com/gpu"]
    flavors = [{
      name      = aiplatform_resource_flavor.rf.name
      resources = [{ name = "nvidia.com/gpu", nominal_quota = "4" }]
    }]
  }]
}

resource "aiplatform_local_queue" "lq" {
  name          = "moved-lq"
  namespace     = "default"
  cluster_queue = aiplatform_cluster_queue.cq.name
}
