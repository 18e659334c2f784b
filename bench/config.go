package main

import (
	"fmt"
	"strings"
)

// platform is the size of a generated platform: M resources split 10% flavors,
// 10% workload priority classes, 30% cluster queues, the rest local queues
// (20/20/60/100 for M = 200).
type platform struct {
	Prefix                               string // object name prefix, so that platforms of several sizes coexist
	Flavors, Priorities, Queues, LocalQs int
	// Cohorts, when set, are aiplatform_cohort resources (terraform_data in
	// the twin) and cluster queue i is in cohort i mod Cohorts; otherwise
	// queues name one of four cohorts that are not resources.
	Cohorts int
}

// newScalePlatform is Kueue's large-scale shape: cohorts × queuesPerCohort
// cluster queues in as many cohorts, one local queue each, over 20 flavors
// (one per node pool) and two priority classes.
func newScalePlatform(cohorts, queuesPerCohort int, prefix string) platform {
	q := cohorts * queuesPerCohort
	return platform{Prefix: prefix, Flavors: poolCount, Priorities: 2, Queues: q, LocalQs: q, Cohorts: cohorts}
}

func newPlatform(m int, prefix string) platform {
	p := platform{Prefix: prefix, Flavors: max(2, m/10), Priorities: max(1, m/10), Queues: max(1, 3*m/10)}
	p.LocalQs = max(1, m-p.Flavors-p.Priorities-p.Queues)
	return p
}

func (p platform) Total() int { return p.Flavors + p.Priorities + p.Queues + p.LocalQs + p.Cohorts }

func (p platform) String() string {
	cohorts := ""
	if p.Cohorts > 0 {
		cohorts = fmt.Sprintf(", %d cohorts", p.Cohorts)
	}
	return fmt.Sprintf("%d resources: %d flavors, %d priority classes%s, %d cluster queues, %d local queues",
		p.Total(), p.Flavors, p.Priorities, cohorts, p.Queues, p.LocalQs)
}

// cohortCount is how many cohorts the queues are spread over.
func (p platform) cohortCount() int {
	if p.Cohorts > 0 {
		return p.Cohorts
	}
	return 4
}

// locals is shared by both configurations: the same objects, the same
// references between them, so that Terraform's own work is the same.
//
// Flavor i selects node pool p(i mod 20). Cluster queue i has one resource
// group (cpu, memory, GPUs) over flavors i and i+1, each resource's quota a
// quarter of the pool's allocatable; it is in one of cohortCount cohorts. Local
// queue i in namespace default points at cluster queue i mod Q.
func (p platform) locals() string {
	return fmt.Sprintf(`variable "kubeconfig" {
  type = string
}

# Changed by the terraform_data twin's "node joined" step, so that its plan
# updates as many resources as a node joining pool p0 does for aiplatform.
variable "generation" {
  type    = number
  default = 1
}

locals {
  prefix    = %q
  resources = ["cpu", "memory", "nvidia.com/gpu"]
  flavors   = { for i in range(%d) : format("f%%03d", i) => { pool = "p${i %% %d}" } }
  priorities = { for i in range(%d) : format("wp%%03d", i) => { value = 100000 - i * 10 } }
  queues = { for i in range(%d) : format("cq%%03d", i) => {
    flavors = [format("f%%03d", i %% %d), format("f%%03d", (i + 1) %% %d)]
    cohort  = "cohort-${i %% %d}"
  } }
  local_queues = { for i in range(%d) : format("lq%%03d", i) => { queue = format("cq%%03d", i %% %d) } }
  cohorts      = toset([for i in range(%d) : "cohort-${i}"])
}
`, p.Prefix, p.Flavors, poolCount, p.Priorities, p.Queues, p.Flavors, p.Flavors, p.cohortCount(), p.LocalQs, p.Queues, p.Cohorts)
}

// aiplatformConfig is the platform as aiplatform resources.
func (p platform) aiplatformConfig() string {
	var b strings.Builder
	b.WriteString(`terraform {
  required_providers {
    aiplatform = {
      source = "aiplatform/aiplatform"
    }
  }
}

provider "aiplatform" {
  config_path = var.kubeconfig
}

`)
	b.WriteString(p.locals())
	b.WriteString(`
resource "aiplatform_resource_flavor" "f" {
  for_each    = local.flavors
  name        = "${local.prefix}${each.key}"
  node_labels = { "` + poolLabel + `" = each.value.pool }
}

resource "aiplatform_workload_priority_class" "p" {
  for_each    = local.priorities
  name        = "${local.prefix}${each.key}"
  value       = each.value.value
  description = "bench priority ${each.key}"
}

resource "aiplatform_cohort" "c" {
  for_each = local.cohorts
  name     = "${local.prefix}${each.key}"
}

resource "aiplatform_cluster_queue" "q" {
  for_each = local.queues
  name     = "${local.prefix}${each.key}"
  cohort   = ` + p.cohortRef("aiplatform_cohort.c[each.value.cohort].name") + `
  resource_groups = [{
    covered_resources = local.resources
    flavors = [for f in each.value.flavors : {
      name = aiplatform_resource_flavor.f[f].name
      resources = [for r in local.resources : {
        name             = r
        from_allocatable = { node_selector = { "` + poolLabel + `" = local.flavors[f].pool }, share = 0.25 }
      }]
    }]
  }]
}

resource "aiplatform_local_queue" "l" {
  for_each      = local.local_queues
  name          = "${local.prefix}${each.key}"
  namespace     = "default"
  cluster_queue = aiplatform_cluster_queue.q[each.value.queue].name
}
`)
	return b.String()
}

// frameworkConfig is the same graph as terraformDataConfig, of the framework
// floor's floor_object resources (bench/floorprovider): what a
// terraform-plugin-framework provider pays for as many objects.
func (p platform) frameworkConfig() string {
	c := p.terraformDataConfig()
	c = strings.ReplaceAll(c, `resource "terraform_data" `, `resource "floor_object" `)
	c = strings.ReplaceAll(c, "terraform_data.", "floor_object.")
	return `terraform {
  required_providers {
    floor = { source = "aiplatform/floor" }
  }
}
` + c
}

// terraformDataConfig is the same graph as terraform_data resources: the floor
// of what Terraform itself costs for as many resources. The queues that use
// pool p0 carry var.generation, so that bumping it changes as many resources
// as a node joining p0 changes cluster queues.
func (p platform) terraformDataConfig() string {
	var b strings.Builder
	b.WriteString(p.locals())
	b.WriteString(`
resource "terraform_data" "f" {
  for_each = local.flavors
  input = {
    name        = "${local.prefix}${each.key}"
    node_labels = { "` + poolLabel + `" = each.value.pool }
  }
}

resource "terraform_data" "p" {
  for_each = local.priorities
  input = {
    name        = "${local.prefix}${each.key}"
    value       = each.value.value
    description = "bench priority ${each.key}"
  }
}

resource "terraform_data" "c" {
  for_each = local.cohorts
  input = {
    name = "${local.prefix}${each.key}"
  }
}

resource "terraform_data" "q" {
  for_each = local.queues
  input = {
    name       = "${local.prefix}${each.key}"
    cohort     = ` + p.cohortRef("terraform_data.c[each.value.cohort].input.name") + `
    generation = contains([for f in each.value.flavors : local.flavors[f].pool], "p0") ? var.generation : 1
    resource_groups = [{
      covered_resources = local.resources
      flavors = [for f in each.value.flavors : {
        name = terraform_data.f[f].input.name
        resources = [for r in local.resources : {
          name             = r
          from_allocatable = { node_selector = { "` + poolLabel + `" = local.flavors[f].pool }, share = 0.25 }
        }]
      }]
    }]
  }
}

resource "terraform_data" "l" {
  for_each = local.local_queues
  input = {
    name          = "${local.prefix}${each.key}"
    namespace     = "default"
    cluster_queue = terraform_data.q[each.value.queue].input.name
  }
}
`)
	return b.String()
}

// cohortRef is how a queue names its cohort: the cohort resource's name when
// cohorts are resources, else the bare name.
func (p platform) cohortRef(resource string) string {
	if p.Cohorts > 0 {
		return resource
	}
	return "each.value.cohort"
}
