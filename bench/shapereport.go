package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/telemetry"
)

// Goals of issue #30, measured by the three shapes.
const (
	goalPlatformPlan     = 1500 * time.Millisecond // refresh + plan of the whole platform
	goalPlatformRequests = 40                      // API requests per plan of the whole platform
	goalDefaultRatio     = 2.5                     // 200 objects on 5,000 nodes vs terraform_data
	goalDefaultRequests  = 10                      // API requests per plan of the 200 objects
	goalScaleRatio       = 3.0                     // 1,000 cluster queues vs terraform_data
	goalScaleRSSMB       = 250                     // provider RSS of the 1,000-queue shape, MB (10^6 bytes)
)

// summary holds the three shapes' results of one run.
type summary struct {
	Platform *platformResult
	Default  *mainResult
	Scale    *scaleResult
}

// profileBlock writes pprof's top functions of an extra profiled plan.
func profileBlock(b *strings.Builder, top string) {
	if top == "" {
		return
	}
	fmt.Fprintf(b, "\nWhere the provider's CPU goes in a plan: one more refresh + plan after the measured ones, with "+
		"`AIPLATFORM_PROFILE` (`-profile`; not in the medians), `go tool pprof -top` of its CPU profiles, cumulative and flat "+
		"(all provider processes of the command):\n\n```\n%s\n```\n", top)
}

func planRow(w func(string, ...any), name string, ai, floor run) {
	w("| %s | %s | %s | **%.2f×** | %s (%s) | %s | %.2f× | %s |\n", name, secs(ai.Wall), secs(floor.Wall), ratio(ai.Wall, floor.Wall),
		secs(ai.TotalCPU), secs(ai.ProviderCPU), secs(floor.TotalCPU), ratio(ai.TotalCPU, floor.TotalCPU), changes(ai))
}

const planTableHead = "| step | aiplatform | terraform_data (floor) | ratio | CPU aiplatform (of which provider) | CPU floor | CPU ratio | changes |\n" +
	"|---|---:|---:|---:|---:|---:|---:|---|\n"

func (r *platformResult) markdown(m machine, command string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("### The whole platform, with its controllers running\n\n")
	w("Measured %s with `%s` — **one run on this machine**, which other work shared "+
		"(1-minute load average %s at the start, %s at the end): %s\n\n",
		r.Started.UTC().Format("2006-01-02 15:04 UTC"), command, r.LoadBefore, r.LoadAfter, m.markdown())
	w("An empty cluster (testenv with the pod runner: %d kwok CPU nodes for the controllers' pods and %d kwok GPU nodes of %s; "+
		"up in %s) gets, in one `terraform apply`, %d resources: `aiplatform_jobset_controller`, `aiplatform_trainer`, `aiplatform_kueue` "+
		"(after Trainer, with the TrainJob, JobSet and Job integrations), `aiplatform_mpi_operator` and `aiplatform_lws_controller` "+
		"from the charts and manifest in the Go module cache, each waiting until its controller — the real one, run by the pod runner "+
		"for the chart's pod — is ready; an `aiplatform_gpu_node_pool` of the GPU nodes, a flavor, a cohort, two workload priority "+
		"classes, %d cluster queues whose quota is 5%% of the pool's allocatable (`from_allocatable`) and %d local queues. "+
		"Floor: the same graph of %d `terraform_data` resources, same run. Each plan ran %d times in each workspace, alternating; medians.",
		platformCPUNodes, platformGPUNodes, platformProduct, r.ClusterStart.Round(100*time.Millisecond), platformResources,
		platformQueues, platformQueues, platformResources, r.Repeat)
	if r.LockWait > time.Second {
		w(" (The apply waited %s for the MPI Operator's port, which another test run held.)", r.LockWait.Round(time.Second))
	}
	w("\n\n" + planTableHead)
	planRow(w, "apply on the empty cluster", r.ApplyAI, r.ApplyFloor)
	planRow(w, "refresh + plan, no change", r.PlanAI.median(), r.PlanFloor.median())
	w("\nEvery run (wall): plan, no change — aiplatform %s; floor %s.\n\n", r.PlanAI.walls(), r.PlanFloor.walls())
	if len(r.PlanSchema) > 0 {
		sp, ap := r.PlanSchema.median(), r.PlanAI.median()
		w("The schema floor (`bench/schemafloor`): the same configuration on a terraform-plugin-framework provider with "+
			"aiplatform's provider, resource and data source schemas (attributes, validators, plan modifiers) and none of its "+
			"logic — no cluster, no plan-time checks, Read keeps the state — what the framework and Terraform cost for these "+
			"schemas. Refresh + plan, no change: **%s** (CPU %s, of which provider %s; every run %s); aiplatform is %.2f× it, "+
			"and adds %s of wall time and %s of provider CPU.\n\n",
			secs(sp.Wall), secs(sp.TotalCPU), secs(sp.ProviderCPU), r.PlanSchema.walls(), ratio(ap.Wall, sp.Wall),
			secs(ap.Wall-sp.Wall), secs(ap.ProviderCPU-sp.ProviderCPU))
	}
	w("Requests the provider made (all provider processes of one terraform command):\n\n")
	requestTable(&b, []namedRuns{{"apply on the empty cluster", stepRuns{r.ApplyAI}}, {"refresh + plan, no change", r.PlanAI}})
	profileBlock(&b, r.Profile)
	return b.String()
}

func (r *scaleResult) markdown(m machine, command string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p := r.Platform
	where := ""
	if r.AfterDefault {
		where = ", on the cluster of the 200-object shape, after it (its objects stay)"
	}
	w("### Kueue's large shape: %d cohorts × %d cluster queues on %d nodes\n\n", p.Cohorts, p.Queues/max(p.Cohorts, 1), r.Cluster.Nodes)
	w("Measured %s with `%s` — **one run on this machine**, which other work shared "+
		"(1-minute load average %s at the start, %s at the end): %s\n\n",
		r.Started.UTC().Format("2006-01-02 15:04 UTC"), command, r.LoadBefore, r.LoadAfter, m.markdown())
	w("Platform: %v (`aiplatform_cohort` resources; cluster queue i in cohort i mod %d, one resource group over two flavors, "+
		"each resource's quota derived with `from_allocatable` from its pool's nodes; local queue i points at cluster queue i)%s. "+
		"Floor: the same graph of %d `terraform_data` resources, same run. Each plan ran %d times in each workspace, alternating; medians.\n\n",
		p, p.Cohorts, where, p.Total(), r.Repeat)
	w(planTableHead)
	planRow(w, "cold apply", r.ApplyAI, r.ApplyFloor)
	planRow(w, "refresh + plan, no change", r.PlanAI.median(), r.PlanFloor.median())
	w("\nEvery run (wall): plan, no change — aiplatform %s; floor %s.\n\n", r.PlanAI.walls(), r.PlanFloor.walls())
	w("Requests the provider made (all provider processes of one terraform command):\n\n")
	requestTable(&b, []namedRuns{{"cold apply", stepRuns{r.ApplyAI}}, {"refresh + plan, no change", r.PlanAI}})
	profileBlock(&b, r.Profile)
	return b.String()
}

// topRequests names the largest request counts of a run, e.g.
// "get clusterqueues.kueue.x-k8s.io 20, list nodes 1".
func topRequests(l telemetry.RequestLog, n int) string {
	keys := l.Keys()
	var parts []string
	for i, k := range keys {
		if i == n {
			parts = append(parts, fmt.Sprintf("%d more kinds", len(keys)-n))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", k, l.Requests[k]))
	}
	return strings.Join(parts, ", ")
}

func (s summary) markdown(m machine, command string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("Measured with `%s` (%s): the three shapes in one run, one after another; each shape's ratio is against "+
		"`terraform_data` in its own step of that run. Details, the request tables and every run: the sections below.\n\n",
		command, s.Platform.Started.UTC().Format("2006-01-02 15:04 UTC"))
	w("| goal (issue #30) | measured | load average (1 min, start → end) | |\n|---|---|---|---|\n")

	pp, pf := s.Platform.PlanAI.median(), s.Platform.PlanFloor.median()
	w("| whole platform: refresh + plan ≤ %s on this machine | %s (terraform_data %s, %.1f×); apply on the empty cluster %s | %s → %s | %s |\n",
		secs(goalPlatformPlan), secs(pp.Wall), secs(pf.Wall), ratio(pp.Wall, pf.Wall), secs(s.Platform.ApplyAI.Wall),
		s.Platform.LoadBefore, s.Platform.LoadAfter, yesNo(pp.Wall <= goalPlatformPlan))
	w("| whole platform: ≤ %d API requests per plan | %d (%s) | | %s |\n", goalPlatformRequests, pp.Requests.Total(),
		topRequests(pp.Requests, 6), yesNo(pp.Requests.Total() <= goalPlatformRequests))
	w("| whole platform: provider peak RSS (no goal) | %s | | |\n", mib(max(s.Platform.PlanAI.peakKiB(), s.Platform.ApplyAI.PeakKiB())))

	d := s.Default
	dp, df := d.PlanAI.median(), d.PlanFloor.median()
	w("| %d objects on %d nodes: refresh + plan ≤ %.1f× `terraform_data` | %.2f× (%s vs %s) | %s → %s | %s |\n",
		d.Platform.Total(), d.Cluster.Nodes, goalDefaultRatio, ratio(dp.Wall, df.Wall), secs(dp.Wall), secs(df.Wall),
		d.LoadBefore, d.LoadAfter, yesNo(ratio(dp.Wall, df.Wall) <= goalDefaultRatio))
	w("| %d objects on %d nodes: ≤ %d API requests per plan | %d (%s) | | %s |\n", d.Platform.Total(), d.Cluster.Nodes,
		goalDefaultRequests, dp.Requests.Total(), topRequests(dp.Requests, 6), yesNo(dp.Requests.Total() <= goalDefaultRequests))

	sc := s.Scale
	sp, sf := sc.PlanAI.median(), sc.PlanFloor.median()
	w("| %d cluster queues (%d cohorts, %d local queues, %d nodes): refresh + plan ≤ %.0f× `terraform_data` | %.2f× (%s vs %s); %d requests per plan | %s → %s | %s |\n",
		sc.Platform.Queues, sc.Platform.Cohorts, sc.Platform.LocalQs, sc.Cluster.Nodes, goalScaleRatio, ratio(sp.Wall, sf.Wall),
		secs(sp.Wall), secs(sf.Wall), sp.Requests.Total(), sc.LoadBefore, sc.LoadAfter, yesNo(ratio(sp.Wall, sf.Wall) <= goalScaleRatio))
	peak := max(sc.PlanAI.peakKiB(), sc.ApplyAI.PeakKiB())
	w("| %d cluster queues: provider RSS ≤ %d MB | peak %s (cold apply, plans) | | %s |\n", sc.Platform.Queues, goalScaleRSSMB, mib(peak),
		yesNo(float64(peak)*1024 <= goalScaleRSSMB*1e6))
	return b.String()
}
