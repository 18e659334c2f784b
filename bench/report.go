package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/telemetry"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// Goals of issue #7.
const (
	goalRatio = 1.5
	goalRSSMB = 150 // MB, 10^6 bytes
)

type machine struct {
	CPUs      int
	CPUModel  string
	MemTotal  string
	Go        string
	Terraform string
	Kernel    string
	Commit    string // git describe of the measured tree
	Provider  string // how the provider was built
}

func describeMachine(ctx context.Context, repo, terraform string) machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if out, err := exec.CommandContext(ctx, "go", "env", "GOVERSION").Output(); err == nil {
		m.Go = strings.TrimSpace(string(out))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				var kib int64
				fmt.Sscanf(strings.TrimSpace(rest), "%d", &kib)
				m.MemTotal = fmt.Sprintf("%.1f GiB", float64(kib)/(1<<20))
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	cmd := exec.CommandContext(ctx, terraform, "version")
	cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1")
	if out, err := cmd.Output(); err == nil {
		m.Terraform = strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	}
	git := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty")
	git.Dir = repo
	if out, err := git.Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	m.Provider = fmt.Sprintf("provider built from `%s`.", m.Commit)
	if strings.HasSuffix(m.Commit, "-dirty") {
		m.Provider = fmt.Sprintf("provider built from `%s` (`-dirty`: with the uncommitted changes of the working tree).", m.Commit)
	}
	return m
}

func (m machine) markdown() string {
	return fmt.Sprintf("%d CPUs (`nproc`; %s), %s memory, Linux %s, %s, %s, Kubernetes %s and kwok %s (testenv); %s",
		m.CPUs, m.CPUModel, m.MemTotal, m.Kernel, m.Go, m.Terraform, testenv.KubernetesVersion, testenv.KwokVersion, m.Provider)
}

// loadAvg is the 1-minute load average, a sign of what else ran.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// clusterFacts is how the cluster got to its size and how busy it keeps the
// machine when idle.
type clusterFacts struct {
	Nodes, Added int
	growth
	IdleCPU cpuSample
}

func mib(kib int64) string {
	return fmt.Sprintf("%.0f MiB (%.0f MB)", float64(kib)/1024, float64(kib)*1024/1e6)
}

func ratio(a, b time.Duration) float64 { return a.Seconds() / b.Seconds() }

func yesNo(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**missed**"
}

// listingsCell describes the node LISTs of a run: listings and pages.
func listingsCell(r telemetry.RequestLog) string {
	k := telemetry.RequestKey{Verb: "list", Resource: "nodes"}
	n, pages := r.Requests[k], r.Pages[k]
	if pages == 0 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d (%d requests: pages of 500)", n-pages, n)
}

// changes shortens terraform's summary line.
func changes(r run) string {
	s := r.Changes
	s = strings.TrimPrefix(s, "Apply complete! Resources: ")
	s = strings.TrimPrefix(s, "Plan: ")
	s = strings.TrimSuffix(s, ".")
	if strings.HasPrefix(s, "No changes") {
		return "no changes"
	}
	return s
}

func (r *mainResult) markdown(m machine, command string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p := r.Platform
	w("### %d resources on %d nodes\n\n", p.Total(), r.Cluster.Nodes)
	w("Measured %s with `%s` — **one run on this machine**, which other work shared "+
		"(1-minute load average %s at the start, %s at the end): %s\n\n",
		r.Started.UTC().Format("2006-01-02 15:04 UTC"), command, r.LoadBefore, r.LoadAfter, m.markdown())
	w("Platform: %v; every cluster queue's quota is derived with `from_allocatable` from the nodes of its two flavors' pools. "+
		"Floor: the same graph of %d `terraform_data` resources, measured in the same run. Each plan step ran %d times in each "+
		"workspace, alternating; medians shown (every run is listed below). CPU is user + system time of terraform and all its "+
		"children (for aiplatform: terraform + provider processes).\n\n", p, p.Total(), r.Repeat)

	w("| step | aiplatform | terraform_data (floor) | ratio | CPU aiplatform (of which provider) | CPU floor | CPU ratio | changes |\n")
	w("|---|---:|---:|---:|---:|---:|---:|---|\n")
	row := func(name string, ai, floor run) {
		w("| %s | %s | %s | **%.2f×** | %s (%s) | %s | %.2f× | %s |\n", name, secs(ai.Wall), secs(floor.Wall), ratio(ai.Wall, floor.Wall),
			secs(ai.TotalCPU), secs(ai.ProviderCPU), secs(floor.TotalCPU), ratio(ai.TotalCPU, floor.TotalCPU), changes(ai))
	}
	row("cold apply", r.ApplyAI, r.ApplyFloor)
	row("refresh + plan, no change", r.PlanAI.median(), r.PlanFloor.median())
	row("plan after one node joins", r.JoinAI.median(), r.JoinFloor.median())
	w("\nEvery run (wall): plan, no change — aiplatform %s; floor %s. After the join — aiplatform %s; floor %s.\n\n",
		r.PlanAI.walls(), r.PlanFloor.walls(), r.JoinAI.walls(), r.JoinFloor.walls())
	w("After node `%s` joined pool p0 the plan shows the derived quota change, e.g. `%s` (%s); "+
		"the floor's plan changes as many resources through a variable.\n\n", r.JoinedNode, r.QuotaDiff, changes(r.JoinAI[0]))

	if len(r.PlanFW) > 0 {
		w("A second floor, built into the bench (`bench/floorprovider`): the same graph of %d `floor_object` resources of the "+
			"smallest terraform-plugin-framework provider (store the input, talk to nothing) — what any framework provider pays "+
			"per object (plugin processes, gRPC, the framework's value handling). Its runs follow the two workspaces above in each step, "+
			"%d each; medians.\n\n", p.Total(), r.Repeat)
		w("| step | aiplatform | framework floor | ratio | provider CPU aiplatform | provider CPU framework floor | CPU ratio (terraform + provider) |\n")
		w("|---|---:|---:|---:|---:|---:|---:|\n")
		fwRow := func(name string, ai, fw run) {
			w("| %s | %s | %s | **%.2f×** | %s | %s | %.2f× |\n", name, secs(ai.Wall), secs(fw.Wall), ratio(ai.Wall, fw.Wall),
				secs(ai.ProviderCPU), secs(fw.ProviderCPU), ratio(ai.TotalCPU, fw.TotalCPU))
		}
		fwRow("cold apply", r.ApplyAI, r.ApplyFW)
		fwRow("refresh + plan, no change", r.PlanAI.median(), r.PlanFW.median())
		fwRow("plan after one node joins", r.JoinAI.median(), r.JoinFW.median())
		w("\nEvery run (wall), framework floor: plan, no change — %s; after the join — %s.\n\n", r.PlanFW.walls(), r.JoinFW.walls())
	}

	w("Cluster: %d kwok GPU nodes in %d pools (8, 8, 4 or 8 GPUs, 96 CPUs each), created in %s by %d concurrent clients "+
		"without client-side rate limit; all had the Ready condition %s after the first create and had lost the not-ready taint "+
		"(node-lifecycle-controller) after %s. %v before the first step, %v after the last. The idle cluster kept %v busy "+
		"(kwok renewing each node's %s lease every %s — a bench setting, testenv's default is 40 s — and the API server and etcd writing them).\n\n",
		r.Cluster.Nodes, poolCount, r.Cluster.Created.Round(100*time.Millisecond), createWorkers, r.Cluster.Ready.Round(100*time.Millisecond),
		r.Cluster.Untainted.Round(time.Second), r.StateBefore, r.StateAfter, r.Cluster.IdleCPU, nodeLease, nodeLease/4)

	w("Requests the provider made (all provider processes of one terraform command, from `AIPLATFORM_REQUEST_LOG`):\n\n")
	requestTable(&b, []namedRuns{{"cold apply", stepRuns{r.ApplyAI}}, {"plan, no change", r.PlanAI}, {"plan after join", r.JoinAI}})
	w("\n")
	plan := r.PlanAI.median()
	planRatio := ratio(plan.Wall, r.PlanFloor.median().Wall)
	lists := plan.Requests.Listings("nodes")
	joinLists := r.JoinAI.median().Requests.Listings("nodes")
	peak := max(r.PlanAI.peakKiB(), r.JoinAI.peakKiB(), r.ApplyAI.PeakKiB())
	w("| goal (issue #7) | measured | |\n|---|---|---|\n")
	w("| refresh + plan of %d objects with %d nodes within %.1f× the terraform_data floor | %.2f× wall (%s vs %s); %.2f× CPU | %s |\n",
		p.Total(), r.Cluster.Nodes, goalRatio, planRatio, secs(plan.Wall), secs(r.PlanFloor.median().Wall),
		ratio(plan.TotalCPU, r.PlanFloor.median().TotalCPU), yesNo(planRatio <= goalRatio))
	w("| one LIST of nodes per plan | %d per plan (%d requests: pages of 500), %d after a node joined | %s |\n",
		lists, plan.Requests.Requests[telemetry.RequestKey{Verb: "list", Resource: "nodes"}], joinLists, yesNo(lists == 1 && joinLists == 1))
	w("| provider RSS < %d MB | peak %s (cold apply, plans) | %s |\n", goalRSSMB, mib(peak), yesNo(float64(peak)*1024 < goalRSSMB*1e6))
	profileBlock(&b, r.Profile)
	return b.String()
}

func yesNoPlain(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

func (r *matrixResult) markdown(m machine, command string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("### Plan time by nodes and resources\n\n")
	state := "the whole grid"
	if !r.Complete {
		state = fmt.Sprintf("**incomplete: %d cells so far**", len(r.Cells))
	}
	w("Measured %s with `%s` (%s, %s) — **one run on this machine**, which other work shared "+
		"(1-minute load average %s at the start, %s at the end): %s\n\n",
		r.Started.UTC().Format("2006-01-02 15:04 UTC"), command, state, r.Elapsed.Round(time.Second), r.LoadBefore, loadAvg(), m.markdown())
	w("One cluster grows through the node counts; at each, every platform size is applied (cold the first time, "+
		"then an update of the quotas that followed the new nodes), then refresh + plan with no change runs %d times "+
		"in each workspace, alternating; medians shown. Cold apply is timed at the first node count only. "+
		"CPU: terraform and its children (provider processes).\n\n", r.Repeat)
	w("| nodes | resources | aiplatform plan | floor plan | ratio | CPU ratio | node listings per plan | requests per plan | provider peak RSS | cold apply: aiplatform / floor |\n")
	w("|---:|---:|---:|---:|---:|---:|---|---:|---|---|\n")
	for _, c := range r.Cells {
		ai, fl := c.PlanAI.median(), c.PlanFloor.median()
		apply := "—"
		if c.ApplyAI != nil {
			apply = fmt.Sprintf("%s / %s (%.1f×)", secs(c.ApplyAI.Wall), secs(c.ApplyFlr.Wall), ratio(c.ApplyAI.Wall, c.ApplyFlr.Wall))
		}
		w("| %d | %d | %s | %s | **%.2f×** | %.2f× | %s | %d | %s | %s |\n", c.Nodes, c.Platform.Total(), secs(ai.Wall), secs(fl.Wall),
			ratio(ai.Wall, fl.Wall), ratio(ai.TotalCPU, fl.TotalCPU), listingsCell(ai.Requests), ai.Requests.Total(), mib(c.PlanAI.peakKiB()), apply)
	}
	w("\nCluster growth:\n\n| nodes | added | created in | all Ready after | untainted after | idle cluster CPU |\n|---:|---:|---:|---:|---:|---|\n")
	for _, f := range r.Clusters {
		w("| %d | %d | %s | %s | %s | %v |\n", f.Nodes, f.Added, f.Created.Round(100*time.Millisecond), f.Ready.Round(100*time.Millisecond),
			f.Untainted.Round(time.Second), f.IdleCPU)
	}
	return b.String()
}

// writeSection replaces the text between the section's markers in the output
// file (appending the section when the markers are missing), keeping the rest.
func (b *bench) writeSection(name, md string) error {
	if b.o.out == "" {
		return nil
	}
	path := b.o.out
	if !filepath.IsAbs(path) {
		path = filepath.Join(b.repo, path)
	}
	begin, end := fmt.Sprintf("<!-- bench:%s:begin -->", name), fmt.Sprintf("<!-- bench:%s:end -->", name)
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	text := string(old)
	section := begin + "\n" + md + end
	i, j := strings.Index(text, begin), strings.Index(text, end)
	switch {
	case i >= 0 && j > i:
		text = text[:i] + section + text[j+len(end):]
	case text == "":
		text = "# Benchmarks\n\n" + section + "\n"
	default:
		text = strings.TrimRight(text, "\n") + "\n\n" + section + "\n"
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return err
	}
	logf("wrote the %s section of %s", name, path)
	return nil
}

// namedRuns are the runs of one step, a column of the request table.
type namedRuns struct {
	name string
	runs stepRuns
}

// requestTable writes the requests of each step's median run by verb and
// resource, their totals, node listings, latency, errors, processes and
// the provider's peak RSS.
func requestTable(b *strings.Builder, steps []namedRuns) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	keys := map[telemetry.RequestKey]bool{}
	var order []telemetry.RequestKey
	for _, s := range steps {
		for _, k := range s.runs.median().Requests.Keys() {
			if !keys[k] {
				keys[k] = true
				order = append(order, k)
			}
		}
	}
	w("| request |")
	for _, s := range steps {
		w(" %s |", s.name)
	}
	w("\n|---|")
	for range steps {
		w("---:|")
	}
	w("\n")
	for _, k := range order {
		w("| `%s` |", k)
		for _, s := range steps {
			w(" %d |", s.runs.median().Requests.Requests[k])
		}
		w("\n")
	}
	line := func(name string, f func(stepRuns) string) {
		w("| %s |", name)
		for _, s := range steps {
			w(" %s |", f(s.runs))
		}
		w("\n")
	}
	line("**total**", func(s stepRuns) string { return fmt.Sprintf("**%d**", s.median().Requests.Total()) })
	line("node listings", func(s stepRuns) string { return listingsCell(s.median().Requests) })
	line("time in requests: sum / median / p90 (to response headers, up to 10 at once)", func(s stepRuns) string {
		sum, med, p90 := s.median().Requests.Latency()
		return fmt.Sprintf("%.1f s / %.0f ms / %.0f ms", sum/1000, med, p90)
	})
	line("failed requests", func(s stepRuns) string { return fmt.Sprint(s.median().Requests.Errors) })
	line("provider processes (that made requests / all)", func(s stepRuns) string {
		return fmt.Sprintf("%d / %d", s.median().Requests.Processes, s.median().PolledProcs)
	})
	line("same requests in every run", func(s stepRuns) string { return yesNoPlain(s.sameRequests()) })
	line("provider peak RSS (VmHWM, highest run)", func(s stepRuns) string { return mib(s.peakKiB()) })
}
