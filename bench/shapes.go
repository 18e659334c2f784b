package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
)

// The shapes -shape picks; they run in this order whatever the flag's order:
// the platform on its own cluster (the pod runner, the controllers), then
// the 200-object shape and the 1,000-queue shape on one cluster of -nodes
// nodes (the large shape after the small one, whose plans would otherwise
// share the cluster with its 2,000 objects).
var shapeOrder = []string{"platform", "default", "scale"}

func parseShapes(s string) ([]string, error) {
	want := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "all" {
			for _, n := range shapeOrder {
				want[n] = true
			}
			continue
		}
		ok := false
		for _, n := range shapeOrder {
			ok = ok || n == f
		}
		if !ok {
			return nil, fmt.Errorf("unknown shape %q (want %s or all)", f, strings.Join(shapeOrder, ","))
		}
		want[f] = true
	}
	var out []string
	for _, n := range shapeOrder {
		if want[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// runShapes runs the chosen shapes, writes each one's section, and the
// summary of issue #30's goals when all three ran.
func (b *bench) runShapes(ctx context.Context) (err error) {
	var sum summary
	for _, shape := range b.o.shapes {
		switch shape {
		case "platform":
			if sum.Platform, err = b.shapePlatform(ctx); err != nil {
				return err
			}
			md := sum.Platform.markdown(b.machine, commandLine())
			fmt.Println(md)
			if err := b.writeSection("platform", md); err != nil {
				return err
			}
		case "default", "scale":
			if b.cluster == nil {
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
			}
			if shape == "default" {
				if sum.Default, err = b.runMain(ctx); err != nil {
					return err
				}
				md := sum.Default.markdown(b.machine, commandLine())
				fmt.Println(md)
				if err := b.writeSection("main", md); err != nil {
					return err
				}
				continue
			}
			if sum.Scale, err = b.runScale(ctx); err != nil {
				return err
			}
			md := sum.Scale.markdown(b.machine, commandLine())
			fmt.Println(md)
			if err := b.writeSection("scale", md); err != nil {
				return err
			}
		}
	}
	if sum.Platform == nil || sum.Default == nil || sum.Scale == nil {
		logf("the summary is written when all three shapes ran (-shape all)")
		return nil
	}
	md := sum.markdown(b.machine, commandLine())
	fmt.Println(md)
	return b.writeSection("summary", md)
}

// shapePlatform starts the platform's own cluster, measures, stops it.
func (b *bench) shapePlatform(ctx context.Context) (res *platformResult, err error) {
	logf("starting the platform's cluster (pod runner, %d CPU nodes, %d GPU nodes)", platformCPUNodes, platformGPUNodes)
	t := time.Now()
	c, err := startClusterWith(ctx, testenv.Options{
		// The pod runner runs each chart's controller pod as the real
		// controller, as internal/resources/installs' acceptance tests do.
		PodRunner: true,
		Nodes: []testenv.NodePool{
			{Name: "cpu", Count: platformCPUNodes},
			{Name: "gpu", Count: platformGPUNodes, GPUs: 8, Product: platformProduct, CPU: "96", Memory: "1024Gi"},
		},
		Log:     os.Stderr,
		Timeout: 5 * time.Minute,
	})
	if err != nil {
		return nil, err
	}
	started := time.Since(t)
	logf("platform cluster up in %s", started.Round(100*time.Millisecond))
	defer func() {
		logf("stopping the platform's cluster")
		if stopErr := c.env.Stop(); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	saved := b.cluster
	b.cluster = c
	defer func() { b.cluster = saved }()
	return b.runPlatform(ctx, started)
}

// awaitMPIOperatorPort takes the machine lock the MPI Operator's pod holds:
// the operator serves /healthz on the fixed port :8080, one per machine
// (acceptance tests of other packages may run theirs). A wait for a shared
// resource, bounded.
func awaitMPIOperatorPort(ctx context.Context) (release func(), err error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	return process.MachineLock(ctx, podrunner.MPIOperatorLock, func(m string) { logf("%s", m) })
}

// scaleResult is the 1,000-queue shape's measurement.
type scaleResult struct {
	Started               time.Time
	LoadBefore, LoadAfter string
	Platform              platform
	Cluster               clusterFacts
	Repeat                int
	ApplyAI, ApplyFloor   run
	PlanAI, PlanFloor     stepRuns
	Profile               string // pprof -top of an extra profiled plan
	AfterDefault          bool   // on the default shape's cluster, with its objects
}

func (b *bench) runScale(ctx context.Context) (*scaleResult, error) {
	res := &scaleResult{Platform: newScalePlatform(b.o.scaleCohorts, b.o.scaleQueues, "s-"), Repeat: b.o.repeat, Started: time.Now(),
		AfterDefault: slices.Contains(b.o.shapes, "default")}
	var err error
	if res.Cluster, err = b.growCluster(ctx, b.o.nodes); err != nil {
		return nil, err
	}
	res.LoadBefore = loadAvg()
	ai, floor, err := b.workspaces("scale", res.Platform)
	if err != nil {
		return nil, err
	}
	logf("scale: %v on %d nodes; cold apply", res.Platform, b.o.nodes)
	if res.ApplyFloor, err = floor.terraform(ctx, []string{"apply", "-auto-approve"}); err != nil {
		return nil, err
	}
	if res.ApplyAI, err = ai.terraform(ctx, []string{"apply", "-auto-approve"}); err != nil {
		return nil, err
	}
	logf("  apply: aiplatform %s (%s), terraform_data %s (%s)", secs(res.ApplyAI.Wall), res.ApplyAI.Changes, secs(res.ApplyFloor.Wall), res.ApplyFloor.Changes)
	plan := []string{"plan", "-detailed-exitcode"}
	if res.PlanAI, res.PlanFloor, err = b.pair(ctx, "plan", ai, floor, plan, plan); err != nil {
		return nil, err
	}
	for _, r := range append(append(stepRuns{}, res.PlanAI...), res.PlanFloor...) {
		if r.ExitCode != 0 {
			return nil, fmt.Errorf("scale: plan right after apply is not empty:\n%s", tail(r.Output, 60))
		}
	}
	res.LoadAfter = loadAvg()
	if res.Profile, err = b.profilePlan(ctx, ai); err != nil {
		return nil, err
	}
	return res, nil
}

// profilePlan runs, with -profile, one more refresh + plan in the aiplatform
// workspace with AIPLATFORM_PROFILE set — not among the measured runs,
// which the profiler would slow down — and returns the top functions of its
// CPU profile (pprof -top, cumulative), or "" without -profile.
func (b *bench) profilePlan(ctx context.Context, ai *workspace) (string, error) {
	if b.o.profile == "" {
		return "", nil
	}
	dir, err := filepath.Abs(b.o.profile)
	if err != nil {
		return "", err
	}
	ai.profile = dir
	defer func() { ai.profile = "" }()
	r, err := ai.terraform(ctx, []string{"plan", "-detailed-exitcode"})
	if err != nil {
		return "", err
	}
	logf("  profiled plan: %s (%s), profiles in %s", secs(r.Wall), r.Changes, r.ProfileDir)
	files, _ := filepath.Glob(filepath.Join(r.ProfileDir, "cpu-*.pprof"))
	if len(files) == 0 {
		return "no CPU profile was written", nil
	}
	sort.Strings(files)
	var parts []string
	for _, top := range []struct {
		title string
		args  []string
	}{
		{"cumulative (the function and what it calls)", []string{"-cum", "-nodecount=30"}},
		{"flat (in the function itself)", []string{"-nodecount=15"}},
	} {
		args := append(append([]string{"tool", "pprof", "-top"}, top.args...), filepath.Join(b.providerDir, "terraform-provider-aiplatform"))
		out, err := exec.CommandContext(ctx, "go", append(args, files...)...).Output()
		if err != nil {
			return "", fmt.Errorf("go tool pprof: %w", err)
		}
		parts = append(parts, top.title+":\n"+pprofLines(string(out)))
	}
	return strings.Join(parts, "\n\n"), nil
}

// pprofLines keeps pprof's table (from the "Duration" line), with the long
// names of generic instantiations cut.
func pprofLines(out string) string {
	var keep []string
	on := false
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		on = on || strings.HasPrefix(line, "Duration:")
		if !on {
			continue
		}
		if i := strings.Index(line, "[go.shape."); i >= 0 {
			if j := strings.LastIndex(line, "])."); j > i {
				line = line[:i] + "[…]" + line[j+1:]
			}
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "\n")
}
