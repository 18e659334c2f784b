# Kueue objects applied by kubernetes_manifest, adopted with import blocks;
# the resource blocks are written by `terraform plan -generate-config-out`
# (import_blocks_test.go).
terraform {
  required_providers {
    aiplatform = { source = "aiplatform/aiplatform" }
  }
}

variable "kubeconfig" { type = string }

provider "aiplatform" {
  config_path = var.kubeconfig
}

import {
  to = aiplatform_workload_priority_class.high
  id = "imp-high"
}

import {
  to = aiplatform_resource_flavor.rf
  id = "imp-rf"
}

import {
  to = aiplatform_cohort.ai
  id = "imp-cohort"
}

import {
  to = aiplatform_cluster_queue.cq
  id = "imp-cq"
}

import {
  to = aiplatform_local_queue.lq
  id = "default/imp-lq"
}
