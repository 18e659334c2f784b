# A shared GPU platform for three teams on two pools of nodes:
#   h100: four nodes with 8 x H100      a100: six nodes with 4 x A100
# Production inference, research and batch share both pools through one
# cohort. Quotas are shares of what the nodes really have (allocatable), so
# when a node joins or leaves, `terraform plan` shows the new quotas.
# Priorities: production > research > batch; production takes back what it
# lent (evicting batch first), batch never preempts anyone.
#
#   terraform apply -var kubeconfig=PATH

terraform {
  required_providers {
    aiplatform = {
      source = "aiplatform/aiplatform"
    }
  }
}

variable "kubeconfig" {
  description = "Path of the kubeconfig of the cluster."
  type        = string
  default     = "~/.kube/config"
}

provider "aiplatform" {
  config_path = var.kubeconfig
}

locals {
  pools = {
    h100 = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
    a100 = { "nvidia.com/gpu.product" = "NVIDIA-A100-SXM4-80GB" }
  }
  # Share of each pool per team (per pool they add up to 1).
  teams = {
    # Production would rather take back its lent H100s (evicting batch) than
    # spill onto A100s: when_can_preempt = "MayStopSearch".
    production = { h100 = 0.5, a100 = 0.25, priority = 1000, within = "LowerPriority", reclaim = "Any", on_preempt = "MayStopSearch" }
    research   = { h100 = 0.25, a100 = 0.5, priority = 500, within = "LowerPriority", reclaim = "LowerPriority", on_preempt = "TryNextFlavor" }
    batch      = { h100 = 0.25, a100 = 0.25, priority = 100, within = "Never", reclaim = "Never", on_preempt = "TryNextFlavor" }
  }
  resources = ["cpu", "memory", "nvidia.com/gpu"]
}

resource "aiplatform_gpu_node_pool" "pool" {
  for_each  = local.pools
  name      = each.key
  selector  = each.value
  labels    = { "aiplatform.dev/pool" = each.key }
  min_nodes = 1
}

resource "aiplatform_resource_flavor" "pool" {
  for_each    = local.pools
  name        = each.key
  node_labels = aiplatform_gpu_node_pool.pool[each.key].labels
}

resource "aiplatform_workload_priority_class" "team" {
  for_each    = local.teams
  name        = each.key
  value       = each.value.priority
  description = "Priority of the ${each.key} team's workloads."
}

resource "aiplatform_cohort" "ai" {
  name = "ai"
}

resource "aiplatform_cluster_queue" "team" {
  for_each = local.teams
  name     = each.key
  cohort   = aiplatform_cohort.ai.name
  preemption = {
    within_cluster_queue  = each.value.within
    reclaim_within_cohort = each.value.reclaim
  }
  flavor_fungibility = {
    when_can_preempt = each.value.on_preempt
  }
  resource_groups = [{
    covered_resources = local.resources
    flavors = [for pool in ["h100", "a100"] : {
      name = aiplatform_resource_flavor.pool[pool].name
      resources = [for r in local.resources : {
        name             = r
        from_allocatable = { node_selector = local.pools[pool], share = each.value[pool] }
      }]
    }]
  }]
}

resource "aiplatform_local_queue" "team" {
  for_each      = local.teams
  name          = each.key
  namespace     = "default"
  cluster_queue = aiplatform_cluster_queue.team[each.key].name
}

output "gpu_quota" {
  description = "GPUs per team and pool, derived from the nodes."
  value = { for team, q in aiplatform_cluster_queue.team : team => {
    for f in q.resource_groups[0].flavors : f.name => f.resources[2].nominal_quota
  } }
}
