package clusterup_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// The checks across resources on the main job: examples/training, changed
// as a user might get it wrong, applied in one run to this empty cluster
// (installs included). Each is refused at plan — naming both resources and
// both numbers — and nothing is created: no release, no queue, no node
// labelled. The same checks against live objects are the training
// package's (TestAccTrainingRuntimeRefusedAtPlan).

// variant is examples/training with each of subs (old → new) replaced; an
// old text the example no longer has fails the test.
func variant(t *testing.T, subs ...string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "main.tf"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(raw)
	for i := 0; i+1 < len(subs); i += 2 {
		if !strings.Contains(src, subs[i]) {
			t.Fatalf("examples/training/main.tf no longer has %q: update this test", subs[i])
		}
		src = strings.ReplaceAll(src, subs[i], subs[i+1])
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// workspace is a terraform workspace of dir with the charts of the module
// cache, as TestAccTrainingExampleOnAnEmptyCluster runs the example.
func workspace(t *testing.T, env *testenv.Env, dir string) *acctest.Workspace {
	w := acctest.NewWorkspace(t, env, dir)
	w.Env = append(w.Env,
		"TF_VAR_kueue_chart_path="+chartDir(t, "sigs.k8s.io/kueue", "v0.17.0", "charts/kueue"),
		"TF_VAR_jobset_chart_path="+chartDir(t, "sigs.k8s.io/jobset", "v0.12.0", "charts/jobset"),
		"TF_VAR_trainer_chart_path="+chartDir(t, "github.com/kubeflow/trainer/v2", "v2.3.0", "charts/kubeflow-trainer"))
	return w
}

// flat is terraform's output without its box drawing and line wrapping.
func flat(out string) string {
	out = strings.NewReplacer("│", " ", "╷", " ", "╵", " ").Replace(out)
	return strings.Join(strings.Fields(out), " ")
}

// refused applies dir and wants it refused at plan with every part of
// want in one diagnostic's text, in order, and nothing created.
func refused(t *testing.T, env *testenv.Env, dir string, want ...string) {
	t.Helper()
	before := created(t, env)
	w := workspace(t, env, dir)
	out, err := w.Run("apply", "-auto-approve")
	if err == nil {
		t.Fatalf("apply succeeded, want it refused at plan:\n%s", out)
	}
	text := flat(out)
	parts := make([]string, len(want))
	for i, s := range want {
		parts[i] = regexp.QuoteMeta(s)
	}
	if !regexp.MustCompile(strings.Join(parts, ".*")).MatchString(text) {
		t.Fatalf("the apply's output lacks %q (in that order):\n%s", want, out)
	}
	if strings.Contains(text, "Creating...") || strings.Contains(text, "Creation complete") {
		t.Fatalf("the apply created something before it was refused:\n%s", out)
	}
	if after := created(t, env); !slices.Equal(before, after) {
		t.Fatalf("the refused apply changed the cluster: before %q, after %q", before, after)
	}
}

// created lists what an apply of the example creates first: Helm releases
// (their Secrets), the nodes labelled by the pool, claims in the example's
// namespace.
func created(t *testing.T, env *testenv.Env) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	secrets, err := env.Client.CoreV1().Secrets("").List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		out = append(out, "release "+s.Namespace+"/"+s.Name)
	}
	nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "example.com/pool"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		out = append(out, "labelled node "+n.Name)
	}
	claims, err := env.Client.CoreV1().PersistentVolumeClaims("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claims.Items {
		out = append(out, fmt.Sprintf("claim %s (%s)", c.Name, c.UID))
	}
	slices.Sort(out)
	return out
}

const gpuQuotaFromPool = `{ name = "nvidia.com/gpu", from_allocatable = { node_selector = aiplatform_gpu_node_pool.train.selector } },`

// A torch runtime of 3 nodes × 8 GPUs whose queue holds 16 GPUs, all of it
// planned in this run: refused at plan. With the example's references
// (pool → flavor → ClusterQueue → LocalQueue → runtime, planned in that
// order) and without them (names written out: Terraform plans them in any
// order, and whichever is planned second refuses).
func TestAccRefusedGangBeyondPlannedQueue(t *testing.T) {
	env := acctest.Env(t)
	for _, refs := range []bool{true, false} {
		subs := []string{
			"num_nodes = 2", "num_nodes = 3",
			gpuQuotaFromPool, `{ name = "nvidia.com/gpu", nominal_quota = "16" },`,
		}
		if !refs {
			subs = append(subs,
				"kueue_queue = aiplatform_local_queue.training.name", `kueue_queue = "training"`,
				"cluster_queue = aiplatform_cluster_queue.training.name", `cluster_queue = "training"`)
		}
		refused(t, env, variant(t, subs...),
			"The gang exceeds the queue's quota", `aiplatform_training_runtime "default/torch-h100"`, "3 nodes × 8 = 24 nvidia.com/gpu",
			`ClusterQueue "training" holds at most 16`, `ClusterQueue "training": planned in this run as aiplatform_cluster_queue`)
	}
}

// Kueue planned in the same run without the TrainJob integration, while
// the runtime asks Kueue for its gang: refused at plan, naming both (after
// an apply, TrainJobs would start at once, without quota).
func TestAccRefusedRuntimeWithoutKueueIntegration(t *testing.T) {
	env := acctest.Env(t)
	refused(t, env, variant(t,
		`integrations = ["batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob"]`,
		`integrations = ["batch/job", "jobset.x-k8s.io/jobset"]`),
		"Kueue cannot admit this runtime's TrainJobs", "aiplatform_kueue (release kueue-system/kueue) lacks",
		`"trainer.kubeflow.org/trainjob"`, `aiplatform_training_runtime "default/torch-h100"`)
}

// The pool the flavor takes its node labels from is of 2-GPU nodes, and the
// runtime's pods (placed only by the flavor: no node_selector of their own)
// ask for 8: refused at plan, though no node carries the pool's label yet.
func TestAccRefusedFlavorPoolSmallerThanPod(t *testing.T) {
	env := acctest.Env(t)
	ctx := context.Background()
	names, err := env.AddNodes(ctx, testenv.NodePool{Name: "small-l4", Count: 1, GPUs: 2, Product: "NVIDIA-L4"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range names {
			_ = env.DeleteNode(context.Background(), n)
		}
	})
	refused(t, env, variant(t,
		"  node_selector = aiplatform_gpu_node_pool.train.selector\n", "",
		`default     = "NVIDIA-H100-80GB-HBM3"`, `default     = "NVIDIA-L4"`,
		"min_nodes = 2", "min_nodes = 1",
		gpuQuotaFromPool, `{ name = "nvidia.com/gpu", nominal_quota = "64" },`),
		"The queue's nodes are too small for one pod", `aiplatform_training_runtime "default/torch-h100"`, "asks for 8 nvidia.com/gpu",
		`flavor "train-h100" (planned in this run as aiplatform_resource_flavor) selects 1 nodes`, `aiplatform_gpu_node_pool "train-h100"`, "at most 2 nvidia.com/gpu")
}

// A gang queue that is neither in the configuration nor in the cluster: the
// plan says, on the attribute, that the quota was not checked and which
// reference lets it check — never a silent pass.
func TestAccGangQueueNotCheckedSaysSo(t *testing.T) {
	env := acctest.Env(t)
	w := workspace(t, env, variant(t, "kueue_queue = aiplatform_local_queue.training.name", `kueue_queue = "elsewhere"`))
	out, err := w.Run("plan")
	if err != nil {
		t.Fatal(out, err)
	}
	text := flat(out)
	for _, want := range []string{"Warning: Gang quota not checked", "gang.kueue_queue", `no LocalQueue default/elsewhere is planned before this runtime`,
		"kueue_queue = aiplatform_local_queue.<name>.name"} {
		if !strings.Contains(text, want) {
			t.Errorf("the plan lacks %q:\n%s", want, out)
		}
	}
}

// The quota derived from the pool's own labels (which no node carries
// before the apply) is the pool's allocatable on the first plan too — 3
// nodes × 8 GPUs — so the gang of 2 × 8 is not refused against a quota of 0.
func TestAccQuotaFromPlannedPoolLabels(t *testing.T) {
	env := acctest.Env(t)
	w := workspace(t, env, variant(t, gpuQuotaFromPool,
		`{ name = "nvidia.com/gpu", from_allocatable = { node_selector = aiplatform_gpu_node_pool.train.labels } },`))
	out, err := w.Run("plan")
	if err != nil {
		t.Fatal(out, err)
	}
	text := flat(out)
	quota := regexp.MustCompile(`name = "nvidia\.com/gpu" (\+ )?nominal_quota = "24"`)
	if !quota.MatchString(text) || strings.Contains(text, "Gang quota not checked") {
		t.Fatalf("the plan does not derive 24 GPUs from the planned pool, or did not check the gang:\n%s", out)
	}
}

// An NCCL check of the pool the same run labels (node_selector = the pool's
// labels, which no node carries before the apply) plans the pool's 3 nodes
// on the first plan; without the planned pool it had "nowhere to run".
func TestAccFabricCheckOnPlannedPool(t *testing.T) {
	env := acctest.Env(t)
	dir := variant(t)
	check := `
resource "aiplatform_nccl_check" "fabric" {
  name          = "fabric"
  node_selector = aiplatform_gpu_node_pool.train.labels
  gpus_per_node = 8
  nics_per_node = 4
  nic_gbps      = 200
}
`
	f, err := os.OpenFile(filepath.Join(dir, "main.tf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(check); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := workspace(t, env, dir).Run("plan")
	if err != nil {
		t.Fatal(out, err)
	}
	text := flat(out)
	if !regexp.MustCompile(`\+ nodes = 3 `).MatchString(text) || strings.Contains(text, "nowhere to run") {
		t.Fatalf("the plan does not run the check on the planned pool's 3 nodes:\n%s", out)
	}
}
