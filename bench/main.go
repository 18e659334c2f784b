// Command bench measures what `terraform plan` and `terraform apply` cost with
// this provider at cluster scale, against Terraform's own floor:
//
//	go run ./bench [-shape default,platform,scale|all] [-nodes 5000] [-resources 200] [-repeat 3]
//	go run ./bench -matrix [-matrix-nodes 100,1000,5000] [-matrix-resources 50,200,800]
//
// It starts the local test cluster (internal/testenv: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok, Kueue's CRDs), creates N
// fake GPU nodes, builds the provider and runs the real terraform CLI (from
// TF_ACC_TERRAFORM_PATH, -terraform or PATH) with dev_overrides on a generated
// platform of M resources, and on the same graph of M terraform_data
// resources. It reports wall times, their ratio, the API requests the provider
// made (by verb and resource, from AIPLATFORM_REQUEST_LOG) and the provider's
// peak resident memory, prints the tables and writes them into BENCHMARKS.md
// (between markers, so that the rest of the file is kept). The cluster is
// stopped when it ends.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

type options struct {
	nodes, resources, repeat  int
	matrix                    bool
	matrixNodes, matrixRes    []int
	terraform, out            string
	keep                      bool
	profile                   string
	env                       []string
	provider                  string
	shapes                    []string
	scaleCohorts, scaleQueues int
}

func main() {
	var o options
	var matrixNodes, matrixRes string
	flag.IntVar(&o.nodes, "nodes", 5000, "fake GPU nodes in the cluster")
	flag.IntVar(&o.resources, "resources", 200, "resources of the generated platform (10% flavors, 10% priority classes, 30% cluster queues, 50% local queues)")
	flag.IntVar(&o.repeat, "repeat", 3, "runs of each plan step; the median is reported")
	flag.BoolVar(&o.matrix, "matrix", false, "run the grid of -matrix-nodes × -matrix-resources instead of the single measurement")
	flag.StringVar(&matrixNodes, "matrix-nodes", "100,1000,5000", "node counts of the grid")
	flag.StringVar(&matrixRes, "matrix-resources", "50,200,800", "resource counts of the grid")
	flag.StringVar(&o.terraform, "terraform", "", "terraform binary (default $TF_ACC_TERRAFORM_PATH, then PATH)")
	flag.StringVar(&o.out, "out", "BENCHMARKS.md", "Markdown file to write the results into (\"\" for none)")
	flag.BoolVar(&o.keep, "keep", false, "keep the workspaces' directory (state, request logs)")
	flag.StringVar(&o.profile, "profile", "", "profile one extra refresh + plan of each shape after the measured ones: the provider writes CPU and heap profiles into this directory (AIPLATFORM_PROFILE), a subdirectory per command, and pprof's top functions go into the section")
	var env, shapes string
	flag.StringVar(&shapes, "shape", "default", "shapes to measure, comma-separated, or all: default (-resources on -nodes), "+
		"platform (the five installs with their real controllers and 45 Kueue objects, on its own cluster), "+
		"scale (-scale-cohorts × -scale-queues cluster queues, as many local queues, on -nodes); all three also write the summary")
	flag.IntVar(&o.scaleCohorts, "scale-cohorts", 10, "cohorts of the scale shape")
	flag.IntVar(&o.scaleQueues, "scale-queues", 100, "cluster queues per cohort of the scale shape")
	flag.StringVar(&o.provider, "provider", "", "use this provider binary instead of building one from the working tree (for experiments)")
	flag.StringVar(&env, "provider-env", "", "extra environment of the aiplatform runs, KEY=VALUE,… (for experiments, e.g. TF_LOG_SDK=off)")
	flag.Parse()
	if env != "" {
		o.env = strings.Split(env, ",")
	}

	var err error
	if o.matrixNodes, err = intList(matrixNodes); err == nil {
		o.matrixRes, err = intList(matrixRes)
	}
	if err == nil {
		o.shapes, err = parseShapes(shapes)
	}
	if err == nil && (min(o.resources, o.matrixRes[0]) < 20 || min(o.nodes, o.matrixNodes[0]) < poolCount || o.repeat < 1) {
		err = fmt.Errorf("need resources ≥ 20, nodes ≥ %d, -repeat ≥ 1", poolCount)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if o.terraform == "" {
		o.terraform = os.Getenv("TF_ACC_TERRAFORM_PATH")
	}
	if o.terraform == "" {
		if o.terraform, err = exec.LookPath("terraform"); err != nil {
			fmt.Fprintln(os.Stderr, "bench: terraform is not on PATH (set TF_ACC_TERRAFORM_PATH or -terraform)")
			os.Exit(2)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runBench(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func intList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad number %q in %q", f, s)
		}
		out = append(out, n)
	}
	sort.Ints(out)
	return out, nil
}

var started = time.Now()

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[bench %6.1fs] %s\n", time.Since(started).Seconds(), fmt.Sprintf(format, args...))
}

// bench is one benchmark session: a cluster, the built provider, workspaces.
type bench struct {
	o           options
	repo        string
	root        string // workspaces
	providerDir string
	cluster     *cluster
	machine     machine
}

func runBench(ctx context.Context, o options) (err error) {
	b := &bench{o: o}
	if b.repo, err = testenv.RepoRoot(); err != nil {
		return err
	}
	if b.root, err = os.MkdirTemp("", "aiplatform-bench-"); err != nil {
		return err
	}
	if o.keep {
		logf("workspaces in %s (kept)", b.root)
	} else {
		defer os.RemoveAll(b.root)
	}
	b.providerDir = filepath.Join(b.root, "bin")
	b.machine = describeMachine(ctx, b.repo, o.terraform)
	if o.provider != "" {
		b.machine.Provider = "provider: the prebuilt binary `" + o.provider + "` (-provider)."
	}

	if o.provider != "" {
		if err := copyFile(o.provider, filepath.Join(b.providerDir, "terraform-provider-aiplatform")); err != nil {
			return err
		}
		if err := buildFloorProviders(ctx, b.repo, b.providerDir); err != nil {
			return err
		}
	} else {
		logf("building the provider")
		t := time.Now()
		if err := buildProvider(ctx, b.repo, b.providerDir); err != nil {
			return err
		}
		if err := buildFloorProviders(ctx, b.repo, b.providerDir); err != nil {
			return err
		}
		logf("provider built (%s)", since(t))
	}

	if !o.matrix {
		return b.runShapes(ctx)
	}
	logf("starting the cluster")
	if b.cluster, err = startCluster(ctx); err != nil {
		return err
	}
	defer func() {
		logf("stopping the cluster")
		if stopErr := b.cluster.env.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	return b.runMatrix(ctx)
}

func since(t time.Time) string { return time.Since(t).Round(10 * time.Millisecond).String() }

func commandLine() string {
	return "go run ./bench " + strings.Join(os.Args[1:], " ")
}

// growCluster brings the cluster to n nodes and says how long it took and
// how busy the idle cluster then is.
func (b *bench) growCluster(ctx context.Context, n int) (clusterFacts, error) {
	var f clusterFacts
	from := b.cluster.nodes
	logf("creating %d fake GPU nodes (%d → %d)", n-from, from, n)
	g, err := b.cluster.growTo(ctx, n)
	if err != nil {
		return f, err
	}
	f = clusterFacts{Nodes: n, Added: n - from, growth: g}
	logf("%d nodes created in %s, all Ready after %s, untainted after %s", n-from, g.Created.Round(10*time.Millisecond),
		g.Ready.Round(10*time.Millisecond), g.Untainted.Round(10*time.Millisecond))
	f.IdleCPU = b.cluster.idleCPU(ctx, 15*time.Second)
	logf("idle cluster CPU over 15 s: %v", f.IdleCPU)
	return f, nil
}

// stepRuns are the runs of one step in one workspace.
type stepRuns []run

func (s stepRuns) median() run {
	sorted := append(stepRuns(nil), s...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Wall < sorted[j].Wall })
	return sorted[len(sorted)/2]
}

func (s stepRuns) peakKiB() int64 {
	var p int64
	for _, r := range s {
		p = max(p, r.PeakKiB())
	}
	return p
}

// walls lists the wall times, for the detail column.
func (s stepRuns) walls() string {
	var parts []string
	for _, r := range s {
		parts = append(parts, secs(r.Wall))
	}
	return strings.Join(parts, ", ")
}

// sameRequests reports whether every run made the same requests.
func (s stepRuns) sameRequests() bool {
	for _, r := range s[1:] {
		if fmt.Sprint(r.Requests.Requests) != fmt.Sprint(s[0].Requests.Requests) {
			return false
		}
	}
	return true
}

// pair runs a step in both workspaces, alternating, repeat times.
func (b *bench) pair(ctx context.Context, name string, ai, floor *workspace, aiArgs, floorArgs []string, ok ...int) (aiRuns, floorRuns stepRuns, err error) {
	for i := range b.o.repeat {
		fr, err := floor.terraform(ctx, floorArgs, ok...)
		if err != nil {
			return nil, nil, err
		}
		ar, err := ai.terraform(ctx, aiArgs, ok...)
		if err != nil {
			return nil, nil, err
		}
		logf("  %s #%d: aiplatform %s (%s; CPU: provider %s %v, with terraform %s), terraform_data %s (%s; CPU %s)", name, i+1,
			secs(ar.Wall), ar.Changes, secs(ar.ProviderCPU), ar.ProcessCPU, secs(ar.TotalCPU), secs(fr.Wall), fr.Changes, secs(fr.TotalCPU))
		aiRuns, floorRuns = append(aiRuns, ar), append(floorRuns, fr)
	}
	return aiRuns, floorRuns, nil
}

// repeatRuns runs a step repeat times in one workspace.
func (b *bench) repeatRuns(ctx context.Context, name string, w *workspace, args []string, ok ...int) (stepRuns, error) {
	var runs stepRuns
	for i := range b.o.repeat {
		r, err := w.terraform(ctx, args, ok...)
		if err != nil {
			return nil, err
		}
		logf("  %s #%d: %s (%s; CPU: provider %s, with terraform %s)", name, i+1, secs(r.Wall), r.Changes, secs(r.ProviderCPU), secs(r.TotalCPU))
		runs = append(runs, r)
	}
	return runs, nil
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// mainResult is the single measurement: N nodes, M resources.
type mainResult struct {
	Started               time.Time
	LoadBefore, LoadAfter string
	Platform              platform
	Cluster               clusterFacts
	Repeat                int
	ApplyAI, ApplyFloor   run
	PlanAI, PlanFloor     stepRuns
	JoinAI, JoinFloor     stepRuns
	// The framework floor (bench/floorprovider), same graph, same run.
	ApplyFW                 run
	PlanFW, JoinFW          stepRuns
	JoinedNode              string
	StateBefore, StateAfter nodeState
	QuotaDiff               string // a line of the join plan showing the derived quota change
	Profile                 string // pprof -top of an extra profiled plan (-profile)
}

func (b *bench) runMain(ctx context.Context) (*mainResult, error) {
	res := &mainResult{Platform: newPlatform(b.o.resources, ""), Repeat: b.o.repeat, Started: time.Now()}
	var err error
	if res.Cluster, err = b.growCluster(ctx, b.o.nodes); err != nil {
		return nil, err
	}
	res.LoadBefore = loadAvg() // the cluster up, before the first step
	ai, floor, err := b.workspaces("main", res.Platform)
	if err != nil {
		return nil, err
	}
	fw, err := newWorkspace(b.root, "main-framework", b.o.terraform, b.providerDir, b.cluster.env.Kubeconfig, res.Platform.frameworkConfig())
	if err != nil {
		return nil, err
	}
	if res.StateBefore, err = b.cluster.state(ctx); err != nil {
		return nil, err
	}
	logf("platform: %v; nodes: %v", res.Platform, res.StateBefore)

	logf("cold apply")
	if res.ApplyFloor, err = floor.terraform(ctx, []string{"apply", "-auto-approve"}); err != nil {
		return nil, err
	}
	if res.ApplyAI, err = ai.terraform(ctx, []string{"apply", "-auto-approve"}); err != nil {
		return nil, err
	}
	logf("  apply: aiplatform %s (%s), terraform_data %s (%s)", secs(res.ApplyAI.Wall), res.ApplyAI.Changes, secs(res.ApplyFloor.Wall), res.ApplyFloor.Changes)
	if res.ApplyFW, err = fw.terraform(ctx, []string{"apply", "-auto-approve"}); err != nil {
		return nil, err
	}
	logf("  apply: framework floor %s (%s)", secs(res.ApplyFW.Wall), res.ApplyFW.Changes)

	logf("refresh + plan, no change (%d runs each)", b.o.repeat)
	plan := []string{"plan", "-detailed-exitcode"}
	if res.PlanAI, res.PlanFloor, err = b.pair(ctx, "plan", ai, floor, plan, plan); err != nil {
		return nil, err
	}
	if res.PlanFW, err = b.repeatRuns(ctx, "plan, framework floor", fw, plan); err != nil {
		return nil, err
	}
	for _, r := range append(append(append(stepRuns{}, res.PlanAI...), res.PlanFloor...), res.PlanFW...) {
		if r.ExitCode != 0 {
			return nil, fmt.Errorf("plan right after apply is not empty:\n%s", tail(r.Output, 60))
		}
	}

	if res.Profile, err = b.profilePlan(ctx, ai); err != nil {
		return nil, err
	}

	if res.JoinedNode, err = b.cluster.join(ctx); err != nil {
		return nil, err
	}
	logf("node %s joined pool p0; plan (%d runs each)", res.JoinedNode, b.o.repeat)
	floorPlan := append(append([]string{}, plan...), "-var", "generation=2")
	if res.JoinAI, res.JoinFloor, err = b.pair(ctx, "plan after join", ai, floor, plan, floorPlan, 2); err != nil {
		return nil, err
	}
	if res.JoinFW, err = b.repeatRuns(ctx, "plan after join, framework floor", fw, floorPlan, 2); err != nil {
		return nil, err
	}
	for _, r := range res.JoinAI {
		if r.ExitCode != 2 {
			return nil, fmt.Errorf("plan after a node joined shows no change:\n%s", tail(r.Output, 60))
		}
	}
	res.QuotaDiff = quotaDiff(res.JoinAI[0].Output)
	if res.QuotaDiff == "" {
		return nil, fmt.Errorf("plan after a node joined does not change a nominal_quota:\n%s", tail(res.JoinAI[0].Output, 80))
	}
	if res.StateAfter, err = b.cluster.state(ctx); err != nil {
		return nil, err
	}
	res.LoadAfter = loadAvg()
	logf("nodes at the end: %v", res.StateAfter)
	return res, nil
}

// quotaDiff returns the first line of a plan that changes a nominal_quota.
func quotaDiff(plan string) string {
	for _, line := range strings.Split(plan, "\n") {
		if strings.Contains(line, "nominal_quota") && strings.Contains(line, "->") {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// workspaces writes the aiplatform configuration and its terraform_data twin.
func (b *bench) workspaces(name string, p platform) (ai, floor *workspace, err error) {
	kc := b.cluster.env.Kubeconfig
	if ai, err = newWorkspace(b.root, name+"-aiplatform", b.o.terraform, b.providerDir, kc, p.aiplatformConfig()); err != nil {
		return nil, nil, err
	}
	ai.env = b.o.env
	floor, err = newWorkspace(b.root, name+"-terraform_data", b.o.terraform, b.providerDir, kc, p.terraformDataConfig())
	return ai, floor, err
}
