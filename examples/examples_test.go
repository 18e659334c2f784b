// Package examples_test applies every example to the test cluster: each must
// apply, leave an empty plan (what `terraform plan -detailed-exitcode` exits
// 0 on), and import with the ID its import.sh documents.
package examples_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

const (
	h100 = "NVIDIA-H100-80GB-HBM3"
	a100 = "NVIDIA-A100-SXM4-80GB"
)

// The examples run on the cluster they describe, judged by the real Kueue
// manager (Kueue's chart, its pod run by testenv's pod runner): four 8 x H100 nodes and six 4 x A100 nodes.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Controllers: []testenv.Controller{testenv.Kueue()}, Nodes: []testenv.NodePool{
		{Name: "h100", Count: 4, GPUs: 8, Product: h100, GPUMemory: "81559"},
		{Name: "a100", Count: 6, GPUs: 4, Product: a100, GPUMemory: "81920"},
	}})
}

// appliedElsewhere are examples this cluster cannot take as they are: the
// installs pull upstream charts (no registry offline) and Volcano's queue
// needs Volcano's CRDs. internal/resources/installs applies them with the
// charts from the module cache and the stand-in Volcano chart.
var appliedElsewhere = map[string]string{
	"aiplatform_kueue":            "applied by internal/resources/installs (TestAccInstallExamples) with the chart from the module cache",
	"aiplatform_volcano":          "applied by internal/resources/installs (TestAccInstallExamples) with the stand-in Volcano chart",
	"aiplatform_volcano_queue":    "applied by internal/resources/installs (TestAccInstallExamples) after the stand-in Volcano chart",
	"aiplatform_kuberay_operator": "applied by internal/resources/installs (TestAccKubeRayOperatorExample) with the stand-in KubeRay chart",
	"aiplatform_lws_controller":   "applied by internal/resources/installs (TestAccLWSControllerExample) with LWS's chart from the module cache",
	"aiplatform_mpi_operator":     "applied by internal/resources/installs (TestAccInstallExamples) with the manifest file from the module cache (the GitHub URL is not reachable offline)",
	"aiplatform_ray_cluster":      "applied by internal/resources/serving (TestAccRayClusterExamples), whose cluster runs the KubeRay operator",
	"aiplatform_lws_group":        "applied by internal/resources/serving (TestAccLWSGroupExamples), whose cluster runs the LWS controller",
	"aiplatform_ray_service":      "applied by internal/resources/serving (TestAccRayServiceExample), whose cluster runs the KubeRay operator",
	"aiplatform_inference_pool":   "applied by internal/resources/serving (TestAccInferencePoolExample), whose cluster has the InferencePool CRD and runs the endpoint picker",
	"aiplatform_checkpoint_store": "applied by internal/resources/training (TestAccCheckpointStoreExample), which creates the example's namespace",
	"aiplatform_nccl_check":       "planned by internal/resources/training (TestAccNCCLCheckExample) and applied by examples/rbac/fabric on a recorded fabric: a check runs through the MPI Operator and cannot be imported (its result lives only in state)",

	// Training controllers.
	"aiplatform_jobset_controller": "applied by internal/resources/installs (TestAccInstallExamples) with JobSet's chart from the module cache",
	"aiplatform_trainer":           "applied by internal/resources/installs (TestAccInstallExamples) with Trainer's and JobSet's charts from the module cache",
	"aiplatform_training_runtime":  "applied by internal/resources/training (TestAccTrainingRuntimeExample), whose cluster runs Trainer, JobSet and Kueue (the namespaced runtime in a namespace of its own)",

	// Serving.
	"aiplatform_kserve": "installs from ghcr.io's OCI charts, unreachable offline; internal/resources/installs/kserve TestAccKServe installs the same charts from the module cache, examples/rbac/kserve the example with them",

	// MultiKueue: a manager and a worker cluster.
	"aiplatform_multikueue_cluster": "applied by internal/resources/kueue/multikueue (TestAccMultiKueueResourceExamples) on a manager with a worker cluster",
	"aiplatform_multikueue_config":  "applied by internal/resources/kueue/multikueue (TestAccMultiKueueResourceExamples) on a manager with a worker cluster",

	// KServe: the serving package's tests install its CRDs.
	"aiplatform_serving_runtime":    "applied by internal/resources/serving (TestAccServingRuntimeExample)",
	"aiplatform_llm_service_preset": "applied by internal/resources/serving (TestAccLLMServicePresetExample)",
}

func TestAccResourceExamples(t *testing.T) {
	env := acctest.Env(t)
	dirs, err := filepath.Glob("resources/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no resource examples found: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			if reason, ok := appliedElsewhere[filepath.Base(dir)]; ok {
				t.Skip(reason)
			}
			ex := acctest.ResourceExample(t, filepath.Base(dir))
			cfg := acctest.Provider(env) + ex.Config
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: acctest.Factories,
				Steps: []resource.TestStep{
					{Config: cfg, ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
					{Config: cfg, PlanOnly: true},
					{Config: cfg, ResourceName: ex.Address, ImportState: true, ImportStateId: ex.ImportID, ImportStateVerify: true},
				},
			})
		})
	}
}

func TestAccDataSourceExamples(t *testing.T) {
	env := acctest.Env(t)
	dirs, err := filepath.Glob("data-sources/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no data source examples found: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			tf, err := os.ReadFile(filepath.Join(dir, "data-source.tf"))
			if err != nil {
				t.Fatal(err)
			}
			cfg := acctest.Provider(env) + string(tf)
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: acctest.Factories,
				Steps: []resource.TestStep{
					{Config: cfg, ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
				},
			})
		})
	}
}

// Whole scenarios run through the CLI, as `make demo` does: under Terraform
// and under OpenTofu (acctest.CLIs; subtests terraform/<dir>, tofu/<dir>).
func TestAccScenarios(t *testing.T) {
	env := acctest.Env(t)
	acctest.ForEachCLI(t, func(t *testing.T, cli acctest.CLI) {
		for _, dir := range []string{"quickstart", "teams", "model-cache"} {
			t.Run(dir, func(t *testing.T) { scenario(t, env, cli, dir, nil) })
		}
	})
}

// A team moving from Terraform to OpenTofu: the state Terraform wrote (its
// provider at registry.terraform.io/aiplatform/aiplatform) is planned by tofu
// with no changes, and tofu destroys what Terraform created.
func TestAccSwitchToOpenTofu(t *testing.T) {
	env := acctest.Env(t)
	byName := map[string]acctest.CLI{}
	for _, cli := range acctest.CLIs(t) {
		byName[cli.Name] = cli
	}
	tf, tfOK := byName["terraform"]
	tofu, tofuOK := byName["tofu"]
	if !tfOK || !tofuOK {
		t.Skip("needs both CLIs (TF_ACC_CLIS)")
	}
	w := acctest.NewWorkspaceFor(t, env, "teams", tf)
	if _, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatal(err)
	}
	w.SetCLI(tofu)
	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("tofu plan -detailed-exitcode on Terraform's state exited %d, want 0:\n%s", code, out)
	}
	if _, err := w.Run("destroy", "-auto-approve"); err != nil {
		t.Fatal(err)
	}
	list, err := env.Dynamic.Resource(clusterQueues).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Fatalf("%d ClusterQueues left after tofu destroy, want none (%s, …)", len(list.Items), list.Items[0].GetName())
	}
}
