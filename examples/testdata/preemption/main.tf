# One queue, no cohort, 8 GPUs, preemption by priority within the queue.
terraform {
  required_providers {
    aiplatform = { source = "aiplatform/aiplatform" }
  }
}

variable "kubeconfig" { type = string }

provider "aiplatform" {
  config_path = var.kubeconfig
}

resource "aiplatform_resource_flavor" "gpu" {
  name = "preempt-flavor"
}

resource "aiplatform_workload_priority_class" "low" {
  name  = "low"
  value = 10
}

resource "aiplatform_workload_priority_class" "high" {
  name  = "high"
  value = 1000
}

resource "aiplatform_cluster_queue" "solo" {
  name       = "solo"
  preemption = { within_cluster_queue = "LowerPriority" }
  resource_groups = [{
    covered_resources = ["nvidia.com/gpu"]
    flavors           = [{ name = aiplatform_resource_flavor.gpu.name, resources = [{ name = "nvidia.com/gpu", nominal_quota = "8" }] }]
  }]
}

resource "aiplatform_local_queue" "solo" {
  name          = "solo"
  namespace     = "default"
  cluster_queue = aiplatform_cluster_queue.solo.name
}
