package release

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

const h100 = "NVIDIA-H100-80GB-HBM3"

// The getting-started guide's cluster: two 8 x H100 nodes and the real Kueue
// manager (its chart, its pod run by testenv's pod runner).
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{
		Controllers: []testenv.Controller{testenv.Kueue()},
		Nodes:       []testenv.NodePool{{Name: "h100", Count: 2, GPUs: 8, Product: h100, GPUMemory: "81559"}},
	})
}

// guideExample is the configuration docs/guides/getting-started.md shows.
const guideExample = "examples/getting-started/main.tf"

// The guide shows the configuration the test applies, verbatim (it renders
// the file with tffile; a stale docs/ would show another).
func TestGettingStartedGuideShowsItsExample(t *testing.T) {
	example, err := os.ReadFile(filepath.Join(repo(t), guideExample))
	if err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile(filepath.Join(repo(t), "docs", "guides", "getting-started.md"))
	if err != nil {
		t.Fatalf("%v (run make generate)", err)
	}
	if !strings.Contains(string(guide), "```terraform\n"+strings.TrimSpace(string(example))+"\n```") {
		t.Fatalf("docs/guides/getting-started.md does not show %s as it is: run make generate", guideExample)
	}
	if !registryConstraint.Match(example) {
		t.Fatalf("%s has no `version = \"~> …\"` constraint for the registry, which the test pins to the snapshot", guideExample)
	}
}

var (
	// registryConstraint is the guide's version constraint; a snapshot is a
	// pre-release, which only an exact constraint matches (the guide says so).
	registryConstraint = regexp.MustCompile(`(?m)^(\s*version\s*=\s*)"~> [0-9.]+"$`)
	clusterQueues      = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}
)

// gettingStarted runs the guide's steps with the CLI, the provider installed
// from the mirror: init, plan (quota computed from the nodes at plan), apply
// (Kueue makes the queue Active), an empty plan; a node joining raises the
// quota at the next plan (exit code 2); a hand edit of the quota plans the
// repair with a warning naming the editor's field manager, the plain apply
// is refused, force_conflicts applies it; destroy is not blocked by a field
// conflict.
func gettingStarted(t *testing.T, env *testenv.Env, cli acctest.CLI, snap release) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	example, err := os.ReadFile(filepath.Join(repo(t), guideExample))
	if err != nil {
		t.Fatal(err)
	}
	m := newMirror(t, cli, snap)
	writeFile(t, filepath.Join(m.work, "main.tf"), registryConstraint.ReplaceAllString(string(example), `${1}"`+snap.version+`"`))
	m.extraArgs = []string{"-var", "kubeconfig=" + env.Kubeconfig}

	// 3. init
	m.init(ctx)

	// 4. plan: the GPU quota is known at plan, from the two nodes.
	out := m.must(ctx, "plan")
	for _, want := range []string{`nominal_quota\s+= "16"`, `Plan: 3 to add, 0 to change, 0 to destroy`, `gpu_quota\s+= "16"`, `gpus_allocatable\s+= 16`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Fatalf("%s plan lacks %s:\n%s", cli.Name, want, out)
		}
	}

	// 5. apply, then nothing to do.
	applied := false
	t.Cleanup(func() {
		if applied {
			// -refresh=false: destroy's refresh is a full plan, which a
			// field conflict left by a failed step would fail.
			if out, code := m.run(context.Background(), "destroy", "-auto-approve", "-refresh=false"); code != 0 {
				t.Errorf("%s destroy exited %d:\n%s", cli.Name, code, out)
			}
		}
	})
	applied = true
	m.must(ctx, "apply", "-auto-approve")
	queue := acctest.Object{GVR: clusterQueues, Name: "team-a"}
	waitQueue(t, env, queue, "16")
	if out, code := m.run(ctx, "plan", "-detailed-exitcode"); code != 0 || !strings.Contains(out, "No changes.") {
		t.Fatalf("%s plan -detailed-exitcode after apply exited %d, want 0 and No changes:\n%s", cli.Name, code, out)
	}

	// 6. drift. A node joins: the quota follows at the next plan.
	names, err := env.AddNodes(ctx, testenv.NodePool{Name: "h100", Count: 1, GPUs: 8, Product: h100, GPUMemory: "81559"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range names {
			if err := env.DeleteNode(context.Background(), n); err != nil {
				t.Errorf("deleting node %s: %v", n, err)
			}
		}
	})
	out, code := m.run(ctx, "plan", "-detailed-exitcode")
	if code != 2 || !regexp.MustCompile(`nominal_quota\s+= "16" -> "24"`).MatchString(out) {
		t.Fatalf("%s plan after a node joined exited %d, want 2 with nominal_quota \"16\" -> \"24\":\n%s", cli.Name, code, out)
	}
	m.must(ctx, "apply", "-auto-approve")
	waitQueue(t, env, queue, "24")

	// Someone edits the quota by hand: the plan shows the repair (exit 2)
	// and warns naming their field manager and the change taking the field
	// back would make; the plain apply is refused and changes nothing; with
	// force_conflicts the apply makes it.
	queue.Edit(t, env, "kubectl-edit", func(obj map[string]any) { setGPUQuota(t, obj, "4") })
	out, code = m.run(ctx, "plan", "-detailed-exitcode")
	if code != 2 || !regexp.MustCompile(`nominal_quota\s+= "4" -> "24"`).MatchString(out) ||
		!strings.Contains(out, `conflict with "kubectl-edit"`) || !strings.Contains(out, "nominalQuota: 4 → 24") {
		t.Fatalf("%s plan after the hand edit exited %d, want 2 with nominal_quota \"4\" -> \"24\" and a warning naming kubectl-edit and nominalQuota: 4 → 24:\n%s", cli.Name, code, out)
	}
	if out, code := m.run(ctx, "apply", "-auto-approve"); code != 1 || !strings.Contains(out, `conflict with "kubectl-edit"`) {
		t.Fatalf("%s apply after the hand edit exited %d, want 1 naming kubectl-edit:\n%s", cli.Name, code, out)
	}
	waitQueue(t, env, queue, "4")
	m.must(ctx, "apply", "-auto-approve", "-var", "force_conflicts=true")
	waitQueue(t, env, queue, "24")
	if out, code := m.run(ctx, "plan", "-detailed-exitcode"); code != 0 {
		t.Fatalf("%s plan after taking the field back exited %d, want 0:\n%s", cli.Name, code, out)
	}

	// 7. destroy: its refresh is a full plan, which a field conflict only
	// warns about.
	queue.Edit(t, env, "kubectl-edit", func(obj map[string]any) { setGPUQuota(t, obj, "4") })
	m.must(ctx, "destroy", "-auto-approve")
	applied = false
	if err := queue.Gone(env)(nil); err != nil {
		t.Fatal(err)
	}
}

// waitQueue checks the live ClusterQueue's GPU quota and waits until Kueue
// reports it Active (Kueue reconciles after the apply returns).
func waitQueue(t *testing.T, env *testenv.Env, queue acctest.Object, gpus string) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(time.Minute); ; {
		obj, err := queue.Get(env)
		if err != nil {
			t.Fatal(err)
		}
		if obj == nil {
			t.Fatalf("ClusterQueue %s does not exist", queue.Name)
		}
		if got := gpuQuota(t, obj.Object); got != gpus {
			t.Fatalf("live ClusterQueue %s: GPU nominalQuota %q, want %q", queue.Name, got, gpus)
		}
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, c := range conds {
			if c, _ := c.(map[string]any); c["type"] == "Active" {
				last = c["status"].(string) + " " + c["reason"].(string)
				if c["status"] == string(metav1.ConditionTrue) {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("ClusterQueue %s is not Active (last: %q)", queue.Name, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// gpuResource is the nvidia.com/gpu entry of the queue's flavors, in the
// object itself (an edit of it edits the object).
func gpuResource(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	spec, _ := obj["spec"].(map[string]any)
	groups, _ := spec["resourceGroups"].([]any)
	for _, g := range groups {
		flavors, _ := g.(map[string]any)["flavors"].([]any)
		for _, f := range flavors {
			resources, _ := f.(map[string]any)["resources"].([]any)
			for _, r := range resources {
				if r, _ := r.(map[string]any); r["name"] == "nvidia.com/gpu" {
					return r
				}
			}
		}
	}
	t.Fatalf("no nvidia.com/gpu quota in %v", obj["spec"])
	return nil
}

func gpuQuota(t *testing.T, obj map[string]any) string {
	t.Helper()
	return fmt.Sprint(gpuResource(t, obj)["nominalQuota"])
}

// setGPUQuota edits the GPU quota in place, as `kubectl edit` would.
func setGPUQuota(t *testing.T, obj map[string]any, q string) {
	t.Helper()
	gpuResource(t, obj)["nominalQuota"] = q
}
