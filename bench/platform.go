package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// The "platform" shape: a whole platform applied to an empty cluster that
// runs the real controllers (testenv's pod runner runs each chart's
// controller pod as the real controller): the Kueue, JobSet, Trainer, MPI
// Operator and LWS installs from the charts and manifest in the Go module
// cache, as the acceptance tests install them, then a GPU node pool, a
// flavor, a cohort, two workload priority classes, platformQueues cluster
// queues deriving their quota from the pool's allocatable and a local queue
// each.
const (
	platformQueues   = 20
	platformGPUNodes = 8 // of one product: the pool
	platformProduct  = "NVIDIA-H100-80GB-HBM3"
	platformCPUNodes = 2 // for the controllers' pods
)

// platformCharts are the local chart directories and manifest file.
type platformCharts struct {
	Kueue, JobSet, Trainer, LWS, MPI string
}

// Versions: Kueue the one testenv and the acceptance tests run (the pod
// runner builds the manager of the chart's image tag); the others the
// catalogue's defaults, whose modules the acceptance tests use too.
func findPlatformCharts(ctx context.Context) (c platformCharts, err error) {
	dir := func(module, version, rel string) string {
		if err != nil {
			return ""
		}
		var d string
		d, err = testenv.ModuleDir(ctx, module, catalog.ModuleVersion(version))
		return filepath.Join(d, rel)
	}
	c.Kueue = dir(catalog.KueueModule, testenv.KueueVersion, catalog.KueueChartDir)
	c.JobSet = dir(catalog.JobSet.Module, catalog.JobSet.DefaultVersion, catalog.JobSet.ChartDir)
	c.Trainer = dir(catalog.Trainer.Module, catalog.Trainer.DefaultVersion, catalog.Trainer.ChartDir)
	c.LWS = dir(catalog.LWS.Module, catalog.LWS.DefaultVersion, catalog.LWS.ChartDir)
	c.MPI = dir(catalog.MPIOperator.Module, catalog.MPIOperator.DefaultVersion, catalog.MPIOperatorManifest)
	return c, err
}

// platformLocals is shared by both configurations.
const platformLocals = `variable "kubeconfig" {
  type = string
}

locals {
  queues     = toset([for i in range(%d) : format("team%%02d", i)])
  priorities = { "training-long" = 100, "short" = 1000 }
  resources  = ["cpu", "memory", "nvidia.com/gpu"]
  selector   = { "nvidia.com/gpu.product" = %q }
}
`

// aiplatform resources of the platform shape. Kueue starts after Trainer
// (its TrainJob integration needs Trainer's CRDs when the manager starts),
// Trainer after JobSet, as in examples/training.
func (c platformCharts) aiplatformConfig() string {
	return `terraform {
  required_providers {
    aiplatform = {
      source = "aiplatform/aiplatform"
    }
  }
}

provider "aiplatform" {
  config_path = var.kubeconfig
}

` + fmt.Sprintf(platformLocals, platformQueues, platformProduct) + fmt.Sprintf(`
resource "aiplatform_jobset_controller" "this" {
  version = %q
  chart   = { path = %q }
  timeout = "5m"
}

resource "aiplatform_trainer" "this" {
  version          = %q
  chart            = { path = %q }
  default_runtimes = false
  timeout          = "5m"
  values           = <<-EOT
    manager:
      resources:
        requests:
          cpu: 100m
          memory: 128Mi
  EOT
  depends_on       = [aiplatform_jobset_controller.this]
}

resource "aiplatform_kueue" "this" {
  version      = %q
  chart        = { path = %q }
  integrations = ["batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob"]
  timeout      = "5m"
  depends_on   = [aiplatform_trainer.this]
}

resource "aiplatform_mpi_operator" "this" {
  version   = %q
  manifests = { path = %q }
  timeout   = "5m"
}

resource "aiplatform_lws_controller" "this" {
  version = "0.1.0" # charts/lws of the module is versioned 0.1.0
  chart   = { path = %q }
  timeout = "5m"
  values  = <<-EOT
    resources:
      requests:
        cpu: 100m
        memory: 256Mi
  EOT
}
`, catalog.JobSet.DefaultVersion, c.JobSet, catalog.Trainer.DefaultVersion, c.Trainer,
		strings.TrimPrefix(testenv.KueueVersion, "v"), c.Kueue,
		catalog.MPIOperator.DefaultVersion, c.MPI, c.LWS) + `
resource "aiplatform_gpu_node_pool" "train" {
  name     = "train"
  selector = local.selector
  labels   = { "bench.aiplatform.dev/platform-pool" = "train" }
}

resource "aiplatform_resource_flavor" "train" {
  name        = "train"
  node_labels = aiplatform_gpu_node_pool.train.labels
  depends_on  = [aiplatform_kueue.this]
}

resource "aiplatform_cohort" "ai" {
  name       = "ai"
  depends_on = [aiplatform_kueue.this]
}

resource "aiplatform_workload_priority_class" "p" {
  for_each    = local.priorities
  name        = each.key
  value       = each.value
  description = "bench priority ${each.key}"
  depends_on  = [aiplatform_kueue.this]
}

resource "aiplatform_cluster_queue" "q" {
  for_each = local.queues
  name     = each.key
  cohort   = aiplatform_cohort.ai.name
  resource_groups = [{
    covered_resources = local.resources
    flavors = [{
      name = aiplatform_resource_flavor.train.name
      resources = [for r in local.resources : {
        name             = r
        from_allocatable = { node_selector = aiplatform_gpu_node_pool.train.selector, share = 0.05 }
      }]
    }]
  }]
}

resource "aiplatform_local_queue" "l" {
  for_each      = local.queues
  name          = each.key
  namespace     = "default"
  cluster_queue = aiplatform_cluster_queue.q[each.key].name
}
`
}

// terraformDataConfig is the same graph of terraform_data resources.
func (c platformCharts) terraformDataConfig() string {
	return fmt.Sprintf(platformLocals, platformQueues, platformProduct) + fmt.Sprintf(`
resource "terraform_data" "jobset" {
  input = { version = %q, chart = %q }
}

resource "terraform_data" "trainer" {
  input      = { version = %q, chart = %q }
  depends_on = [terraform_data.jobset]
}

resource "terraform_data" "kueue" {
  input      = { version = %q, chart = %q, integrations = ["batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob"] }
  depends_on = [terraform_data.trainer]
}

resource "terraform_data" "mpi" {
  input = { version = %q, manifests = %q }
}

resource "terraform_data" "lws" {
  input = { version = "0.1.0", chart = %q }
}
`, catalog.JobSet.DefaultVersion, c.JobSet, catalog.Trainer.DefaultVersion, c.Trainer,
		strings.TrimPrefix(testenv.KueueVersion, "v"), c.Kueue,
		catalog.MPIOperator.DefaultVersion, c.MPI, c.LWS) + `
resource "terraform_data" "pool" {
  input = { name = "train", selector = local.selector, labels = { "bench.aiplatform.dev/platform-pool" = "train" } }
}

resource "terraform_data" "flavor" {
  input      = { name = "train", node_labels = terraform_data.pool.input.labels }
  depends_on = [terraform_data.kueue]
}

resource "terraform_data" "cohort" {
  input      = { name = "ai" }
  depends_on = [terraform_data.kueue]
}

resource "terraform_data" "p" {
  for_each   = local.priorities
  input      = { name = each.key, value = each.value, description = "bench priority ${each.key}" }
  depends_on = [terraform_data.kueue]
}

resource "terraform_data" "q" {
  for_each = local.queues
  input = {
    name   = each.key
    cohort = terraform_data.cohort.input.name
    resource_groups = [{
      covered_resources = local.resources
      flavors = [{
        name = terraform_data.flavor.input.name
        resources = [for r in local.resources : {
          name             = r
          from_allocatable = { node_selector = terraform_data.pool.input.selector, share = 0.05 }
        }]
      }]
    }]
  }
}

resource "terraform_data" "l" {
  for_each = local.queues
  input = {
    name          = each.key
    namespace     = "default"
    cluster_queue = terraform_data.q[each.key].input.name
  }
}
`
}

// platformResources is the number of resources of the platform shape:
// five installs, pool, flavor, cohort, two priorities, the queues.
const platformResources = 5 + 1 + 1 + 1 + 2 + 2*platformQueues

// platformResult is the platform shape's measurement.
type platformResult struct {
	Started               time.Time
	LoadBefore, LoadAfter string
	Repeat                int
	ClusterStart          time.Duration // testenv up with the pod runner, nodes Ready
	LockWait              time.Duration // waiting for the MPI Operator's port
	ApplyAI, ApplyFloor   run
	PlanAI, PlanFloor     stepRuns
	// The schema floor (bench/schemafloor): the aiplatform configuration
	// on a provider with aiplatform's schemas and no logic.
	ApplySchema run
	PlanSchema  stepRuns
	Profile     string // pprof -top of an extra profiled plan
}

// schemaFloorConfig is c's configuration served by bench/schemafloor.
func schemaFloorConfig(c string) string {
	return strings.Replace(c, `source = "aiplatform/aiplatform"`, `source = "aiplatform/schemafloor"`, 1)
}

// runPlatform measures the platform shape on the cluster b.cluster, which
// must run the pod runner (startPlatformCluster).
func (b *bench) runPlatform(ctx context.Context, started time.Duration) (*platformResult, error) {
	res := &platformResult{Repeat: b.o.repeat, Started: time.Now(), ClusterStart: started}
	charts, err := findPlatformCharts(ctx)
	if err != nil {
		return nil, err
	}
	kc := b.cluster.env.Kubeconfig
	ai, err := newWorkspace(b.root, "platform-aiplatform", b.o.terraform, b.providerDir, kc, charts.aiplatformConfig())
	if err != nil {
		return nil, err
	}
	ai.env = b.o.env
	floor, err := newWorkspace(b.root, "platform-terraform_data", b.o.terraform, b.providerDir, kc, charts.terraformDataConfig())
	if err != nil {
		return nil, err
	}
	schema, err := newWorkspace(b.root, "platform-schemafloor", b.o.terraform, b.providerDir, kc, schemaFloorConfig(charts.aiplatformConfig()))
	if err != nil {
		return nil, err
	}
	t := time.Now()
	release, err := awaitMPIOperatorPort(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	res.LockWait = time.Since(t)
	res.LoadBefore = loadAvg()

	logf("platform: apply on the empty cluster (%d resources: 5 installs, pool, flavor, cohort, 2 priorities, %d cluster queues, %d local queues)",
		platformResources, platformQueues, platformQueues)
	if res.ApplyFloor, err = floor.terraform(ctx, []string{"apply", "-auto-approve"}); err != nil {
		return nil, err
	}
	if res.ApplyAI, err = ai.terraform(ctx, []string{"apply", "-auto-approve"}); err != nil {
		return nil, err
	}
	if res.ApplySchema, err = schema.terraform(ctx, []string{"apply", "-auto-approve"}); err != nil {
		return nil, err
	}
	logf("  apply: aiplatform %s (%s), terraform_data %s (%s), schema floor %s", secs(res.ApplyAI.Wall), res.ApplyAI.Changes,
		secs(res.ApplyFloor.Wall), res.ApplyFloor.Changes, secs(res.ApplySchema.Wall))

	logf("platform: refresh + plan, no change (%d runs each)", b.o.repeat)
	plan := []string{"plan", "-detailed-exitcode"}
	if res.PlanAI, res.PlanFloor, err = b.pair(ctx, "plan", ai, floor, plan, plan); err != nil {
		return nil, err
	}
	if res.PlanSchema, err = b.repeatRuns(ctx, "plan, schema floor", schema, plan); err != nil {
		return nil, err
	}
	for _, r := range append(append(append(stepRuns{}, res.PlanAI...), res.PlanFloor...), res.PlanSchema...) {
		if r.ExitCode != 0 {
			return nil, fmt.Errorf("platform: plan right after apply is not empty:\n%s", tail(r.Output, 60))
		}
	}
	res.LoadAfter = loadAvg()
	if res.Profile, err = b.profilePlan(ctx, ai); err != nil {
		return nil, err
	}
	return res, nil
}
