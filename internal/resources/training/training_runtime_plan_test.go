package training_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

// Bad runtimes are refused at plan with the attribute's path, and nothing is
// created: checks across attributes, the live nodes, the gang queue's quota
// (a ClusterQueue of 8 GPUs, applied first), Volcano's absence.
func TestAccTrainingRuntimeRefusedAtPlan(t *testing.T) {
	env := acctest.Env(t)
	queue := gangQueue("rt-tiny", "8")
	// The pool's live size (another test of the package grows it).
	nc, err := env.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: "testpool=nc"})
	if err != nil {
		t.Fatal(err)
	}
	poolNodes := len(nc.Items)
	base := []string{
		`framework = "torch"`,
		`num_nodes = 1`,
		`image     = "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"`,
		`resources_per_node = { gpus = 8 }`,
		`node_selector = { testpool = "nc" }`,
	}
	// with replaces the base lines that start like the given ones.
	with := func(lines ...string) string {
		out := append([]string(nil), base...)
		for _, l := range lines {
			key := strings.Fields(l)[0]
			replaced := false
			for i, b := range out {
				if strings.Fields(b)[0] == key {
					out[i], replaced = l, true
				}
			}
			if !replaced {
				out = append(out, l)
			}
		}
		return acctest.Provider(env) + queue + runtimeHCL("bad", "rt-bad", out...)
	}
	cases := []struct {
		name   string
		config string
		want   []string
	}{
		{"unknown framework", with(`framework = "tensorflow"`), []string{"framework", "tensorflow"}},
		{"no nodes", with(`num_nodes = 0`), []string{"num_nodes"}},
		{"torch procs per node", with(`procs_per_node = 4`), []string{"procs_per_node", "torch policy has no numProcPerNode"}},
		{"jax procs per node", with(`framework = "jax"`, `procs_per_node = 2`), []string{"procs_per_node", "one process per node"}},
		{"credential as a plain value", with(`env = { HF_TOKEN = "hf_abc" }`), []string{`env["HF_TOKEN"]`, "looks like a credential", "secret_env"}},
		{"torch rank variable", with(`env = { PET_MASTER_ADDR = "x" }`), []string{`env["PET_MASTER_ADDR"]`, "injected by Trainer"}},
		{"MPI hostfile variable", with(`framework = "mpi"`, `num_nodes = 2`, `env = { OMPI_MCA_plm_rsh_args = "-p 2222" }`), []string{"OMPI_MCA_plm_rsh_args", "injected by Trainer"}},
		{"duplicate variable", with(`env = { NCCL_DEBUG = "INFO" }`, `secret_env = [{ name = "NCCL_DEBUG", secret = "s", key = "k" }]`),
			[]string{"Duplicate environment variable", "secret_env[0].name", `also set at env["NCCL_DEBUG"]`}},
		{"MPI on one node", with(`framework = "deepspeed"`), []string{"num_nodes", "launcher and at least one sshd node"}},
		{"one MPI slot beside GPUs", with(`framework = "mpi"`, `num_nodes = 2`, `procs_per_node = 1`), []string{"procs_per_node", "replaces 1 by the GPUs per node"}},
		{"invalid variable name", with(`secret_env = [{ name = "1BAD", secret = "s", key = "k" }]`), []string{"secret_env[0].name"}},
		{"two gang mechanisms", with(`gang = { kueue_queue = "rt-tiny", scheduler = "volcano" }`), []string{"gang", "not both"}},
		{"no gang mechanism", with(`gang = {}`), []string{"gang", "set kueue_queue or scheduler"}},
		{"timeout for Volcano", with(`gang = { scheduler = "volcano", schedule_timeout = "5m" }`), []string{"gang.schedule_timeout", "only the coscheduling policy"}},
		{"trainer container in the template", with(`template = { containers = [{ name = "node", image = "x" }] }`),
			[]string{"template.containers[0].name", "trainer's"}},
		{"placement in the template", with(`template = { node_selector = { a = "b" } }`), []string{"template.node_selector", "top level"}},
		{"relative checkpoint path", with(`checkpoint = { claim_name = "c", mount_path = "ckpt" }`), []string{"checkpoint.mount_path", "absolute path"}},
		{"invalid CPU", with(`resources_per_node = { gpus = 8, cpu = "lots" }`), []string{"resources_per_node.cpu"}},
		{"more GPUs than a node has", with(`resources_per_node = { gpus = 16 }`),
			[]string{"resources_per_node.gpus", "asks for 16", "at most 8 allocatable"}},
		{"more nodes than the pool holds", with(fmt.Sprintf("num_nodes = %d", poolNodes+1)),
			[]string{"num_nodes", fmt.Sprintf("%d nodes × 8", poolNodes+1), fmt.Sprintf("room for only %d", poolNodes)}},
		{"gang beyond the queue's quota", with(`num_nodes = 2`, `gang = { kueue_queue = "rt-tiny" }`),
			[]string{"gang.kueue_queue", "16 nvidia.com/gpu", `ClusterQueue "rt-tiny" holds at most 8`}},
		{"Volcano not installed", with(`gang = { scheduler = "volcano" }`), []string{"gang.scheduler", "Volcano's PodGroups"}},
	}
	steps := []resource.TestStep{{Config: acctest.Provider(env) + queue}}
	for _, c := range cases {
		parts := []string{}
		for _, w := range c.want {
			// Terraform wraps long messages: any space may be a line break.
			parts = append(parts, strings.ReplaceAll(regexp.QuoteMeta(w), " ", `\s+`))
		}
		steps = append(steps, resource.TestStep{
			Config:      c.config,
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)` + strings.Join(parts, ".*")),
		})
	}
	steps = append(steps, resource.TestStep{Config: acctest.Provider(env) + queue, Check: clusterRuntime("rt-bad").Gone(env)})
	if len(cases) < 15 {
		t.Fatalf("%d cases, want at least 15", len(cases))
	}
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: acctest.Factories, Steps: steps})
}

// Trainer's published torch runtime (manifests/base/runtimes in the module),
// created as kubectl would: imported with generated configuration, empty
// plan, the live object untouched.
func TestAccTrainingRuntimeAdoptTrainerSample(t *testing.T) {
	env := acctest.Env(t)
	mod, err := testenv.ModuleDir(context.Background(), podrunner.TrainerModule, podrunner.TrainerVersion)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(mod, "manifests", "base", "runtimes", "torch_distributed.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sample := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &sample.Object); err != nil {
		t.Fatal(err)
	}
	name := sample.GetName()
	client := env.Dynamic.Resource(clusterRuntimes)
	if _, err := client.Create(context.Background(), sample, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	obj := clusterRuntime(name)
	before, err := obj.Get(env)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	main := acctest.RequiredProviders + "variable \"kubeconfig\" { type = string }\nprovider \"aiplatform\" {\n  config_path = var.kubeconfig\n}\n" +
		"import {\n  to = aiplatform_training_runtime.adopted\n  id = \"" + name + "\"\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	w := acctest.NewWorkspace(t, env, dir)
	if out, err := w.Run("plan", "-generate-config-out=generated.tf"); err != nil {
		t.Fatal(out, err)
	}
	gen, err := os.ReadFile(filepath.Join(w.Dir(), "generated.tf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`framework = "torch"`, `num_nodes = 1`, `image = "pytorch/pytorch:`} {
		if !strings.Contains(strings.Join(strings.Fields(string(gen)), " "), want) {
			t.Errorf("generated configuration lacks %s:\n%s", want, gen)
		}
	}
	if out, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatal(out, err)
	}
	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan after import: exit code %d, want 0\n%s\ngenerated:\n%s", code, out, gen)
	}
	live, err := obj.Get(env)
	if err != nil {
		t.Fatal(err)
	}
	if changed := kube.ChangedPaths(before.Object, live.Object); len(changed) > 0 || live.GetResourceVersion() != before.GetResourceVersion() {
		t.Fatalf("import, apply and plan changed the live object: %v", changed)
	}
}

// The resource example applies (its namespace created first), plans empty
// and imports: examples/examples_test.go's cluster has no Trainer.
func TestAccTrainingRuntimeExample(t *testing.T) {
	env := acctest.Env(t)
	// The example's namespace "training" is also the checkpoint store
	// example's, which deletes it; testenv runs no namespace controller, so
	// it stays Terminating. The runtime example runs in a namespace of its
	// own instead, its only change.
	const exNS = "training-rt"
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: exNS}}
	if _, err := env.Client.CoreV1().Namespaces().Create(context.Background(), nsObj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ex := acctest.ResourceExample(t, "aiplatform_training_runtime")
	body := strings.ReplaceAll(ex.Config, `namespace      = "training"`, `namespace      = "`+exNS+`"`)
	if body == ex.Config {
		t.Fatal(`the example no longer says namespace = "training": update this test`)
	}
	cfg := acctest.Provider(env) + body
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{Config: cfg, ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check: resource.ComposeAggregateTestCheckFunc(
					clusterRuntime("torch-h100").Equal(env, "team-a", "metadata", "labels", "kueue.x-k8s.io/queue-name"),
					acctest.Object{GVR: runtimes, Namespace: exNS, Name: "deepspeed-a100"}.Equal(env, "4", "spec", "mlPolicy", "mpi", "numProcPerNode"),
					acctest.Object{GVR: runtimes, Namespace: exNS, Name: "deepspeed-a100"}.Equal(env, "launcher",
						"spec", "template", "spec", "replicatedJobs", "1", "name"),
					resource.TestCheckResourceAttr("aiplatform_training_runtime.deepspeed", "kind", "TrainingRuntime"),
				)},
			{Config: cfg, PlanOnly: true},
			{Config: cfg, ResourceName: ex.Address, ImportState: true, ImportStateId: ex.ImportID, ImportStateVerify: true},
			{Config: cfg, ResourceName: "aiplatform_training_runtime.deepspeed", ImportState: true, ImportStateId: exNS + "/deepspeed-a100", ImportStateVerify: true},
		},
	})
}

// A queue that may admit the gang in a flavor whose nodes are too small for
// one pod (the 2-GPU pool, after the 8-GPU one): the plan warns, naming the
// flavor and both numbers.
func TestAccTrainingRuntimeWarnsOfSmallFlavor(t *testing.T) {
	env := acctest.Env(t)
	dir := t.TempDir()
	main := acctest.RequiredProviders + "variable \"kubeconfig\" { type = string }\nprovider \"aiplatform\" {\n  config_path = var.kubeconfig\n}\n" + `
resource "aiplatform_resource_flavor" "big" {
  name        = "rt-fb-big"
  node_labels = { testpool = "nc" }
}
resource "aiplatform_resource_flavor" "small" {
  name        = "rt-fb-small"
  node_labels = { testpool = "small" }
}
resource "aiplatform_cluster_queue" "cq" {
  name = "rt-fb"
  resource_groups = [{
    covered_resources = ["nvidia.com/gpu"]
    flavors = [
      { name = aiplatform_resource_flavor.big.name, resources = [{ name = "nvidia.com/gpu", nominal_quota = "16" }] },
      { name = aiplatform_resource_flavor.small.name, resources = [{ name = "nvidia.com/gpu", nominal_quota = "16" }] },
    ]
  }]
}
resource "aiplatform_local_queue" "q" {
  name          = "rt-fb"
  namespace     = "default"
  cluster_queue = aiplatform_cluster_queue.cq.name
}
` + runtimeHCL("fb", "rt-fb", `framework = "torch"`, `num_nodes = 2`, `image = "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"`,
		`resources_per_node = { gpus = 8 }`, `gang = { kueue_queue = "rt-fb" }`)
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	w := acctest.NewWorkspace(t, env, dir)
	if out, err := w.Run("apply", "-auto-approve", "-target=aiplatform_local_queue.q"); err != nil {
		t.Fatal(out, err)
	}
	out, err := w.Run("plan")
	if err != nil {
		t.Fatal(out, err)
	}
	flat := strings.Join(strings.Fields(strings.ReplaceAll(out, "│", " ")), " ")
	for _, want := range []string{"A flavor's nodes are too small", `flavor "rt-fb-small"`, "at most 2 nvidia.com/gpu", "fewer than the 8 one pod asks for"} {
		if !strings.Contains(flat, want) {
			t.Errorf("plan output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(flat, `flavor "rt-fb-big"`) {
		t.Errorf("the plan warns about the 8-GPU flavor:\n%s", out)
	}
}
