package installs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// The examples of this package's resources and examples/platform, applied
// here because they need charts: offline, the Kueue chart comes from the
// module cache and Volcano's from the stand-in (a `chart = { path = … }`
// line is added to the example's resource block).

func example(t *testing.T, rel string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "examples", rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withChart adds lines to the body of `resource "<typ>" "<name>" {`.
func withChart(t *testing.T, tf, typ, lines string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^resource "` + typ + `" "[a-z_]+" \{\n`)
	loc := re.FindStringIndex(tf)
	if loc == nil {
		t.Fatalf("no %s block in the example", typ)
	}
	return tf[:loc[1]] + lines + "\n" + tf[loc[1]:]
}

func importOf(t *testing.T, typeName string) (addr, id string) {
	ex := acctest.ResourceExample(t, typeName)
	return ex.Address, ex.ImportID
}

func TestAccInstallExamples(t *testing.T) {
	env := acctest.Env(t)
	ignore := []string{"chart", "chart.%", "chart.path", "chart.name", "chart.repository", "timeout", "values", "remove_crds", "revision"}

	t.Run("aiplatform_kueue", func(t *testing.T) {
		cfg := acctest.Provider(env) + withChart(t, example(t, "resources/aiplatform_kueue/resource.tf"), "aiplatform_kueue",
			fmt.Sprintf("  chart = { path = %q }", acctest.KueueChartAt(t, "v0.19.2"))) // the example's version
		addr, id := importOf(t, "aiplatform_kueue")
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: acctest.Factories,
			Steps: []resource.TestStep{
				{Config: cfg, ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
				{Config: cfg, ResourceName: addr, ImportState: true, ImportStateId: id, ImportStateVerify: true, ImportStateVerifyIgnore: ignore},
			},
		})
	})

	// JobSet's and Trainer's examples with the charts from the module cache
	// (the same versions as the registry's), CRDs removed afterwards.
	jobSet := fmt.Sprintf("  chart = { path = %q }\n  remove_crds = true", jobSetChart(t))
	t.Run("aiplatform_jobset_controller", func(t *testing.T) {
		cfg := acctest.Provider(env) + withChart(t, example(t, "resources/aiplatform_jobset_controller/resource.tf"), "aiplatform_jobset_controller", jobSet)
		addr, id := importOf(t, "aiplatform_jobset_controller")
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: acctest.Factories,
			Steps: []resource.TestStep{
				{Config: cfg, Check: acctest.JobSetDeployment.Equal(env, 1, "status", "readyReplicas"),
					ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
				{Config: cfg, ResourceName: addr, ImportState: true, ImportStateId: id, ImportStateVerify: true, ImportStateVerifyIgnore: ignore},
			},
			CheckDestroy: resource.ComposeAggregateTestCheckFunc(acctest.JobSetDeployment.Gone(env), acctest.JobSetCRD.Gone(env)),
		})
	})

	t.Run("aiplatform_trainer", func(t *testing.T) {
		tf := withChart(t, example(t, "resources/aiplatform_trainer/resource.tf"), "aiplatform_jobset_controller", jobSet)
		tf = withChart(t, tf, "aiplatform_trainer", fmt.Sprintf("  chart = { path = %q }\n  remove_crds = true", trainerChart(t)))
		cfg := acctest.Provider(env) + tf
		addr, id := importOf(t, "aiplatform_trainer")
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: acctest.Factories,
			Steps: []resource.TestStep{
				{Config: cfg, Check: resource.ComposeAggregateTestCheckFunc(
					acctest.TrainerDeployment.Equal(env, 1, "status", "readyReplicas"),
					torchRuntime.Check(env, labelled("trainer.kubeflow.org/managed-by", "runtimes-installer")),
				), ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
				{Config: cfg, ResourceName: addr, ImportState: true, ImportStateId: id, ImportStateVerify: true, ImportStateVerifyIgnore: ignore},
			},
			CheckDestroy: resource.ComposeAggregateTestCheckFunc(acctest.TrainerDeployment.Gone(env), torchRuntime.Gone(env), trainerCRD.Gone(env), acctest.JobSetCRD.Gone(env)),
		})
	})

	volcano := fmt.Sprintf("  chart = { path = %q }\n  remove_crds = true", volcanoChart(t))
	t.Run("aiplatform_volcano", func(t *testing.T) {
		cfg := acctest.Provider(env) + withChart(t, example(t, "resources/aiplatform_volcano/resource.tf"), "aiplatform_volcano", volcano)
		addr, id := importOf(t, "aiplatform_volcano")
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: acctest.Factories,
			Steps: []resource.TestStep{
				{Config: cfg, ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
				{Config: cfg, ResourceName: addr, ImportState: true, ImportStateId: id, ImportStateVerify: true, ImportStateVerifyIgnore: ignore},
			},
		})
	})

	t.Run("aiplatform_mpi_operator", func(t *testing.T) {
		cfg := acctest.Provider(env) + withChart(t, example(t, "resources/aiplatform_mpi_operator/resource.tf"), "aiplatform_mpi_operator",
			fmt.Sprintf("  manifests = { path = %q }\n  remove_crds = true\n  timeout = \"3m\"", mpiOperatorFile(t)))
		addr, id := importOf(t, "aiplatform_mpi_operator")
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: acctest.Factories,
			Steps: []resource.TestStep{
				{PreConfig: func() { acctest.AwaitMPIOperatorPort(t) }, Config: cfg,
					ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
				{Config: cfg, ResourceName: addr, ImportState: true, ImportStateId: id, ImportStateVerify: true, ImportStateVerifyIgnore: []string{"remove_crds", "timeout"}},
			},
			CheckDestroy: resource.ComposeAggregateTestCheckFunc(mpiDeployment.Gone(env), mpiNamespace.Gone(env), mpiCRD.Gone(env)),
		})
	})

	t.Run("aiplatform_volcano_queue", func(t *testing.T) {
		base := acctest.Provider(env) + volcanoBlock(t, "")
		cfg := base + strings.Replace(example(t, "resources/aiplatform_volcano_queue/resource.tf"),
			"  name ", "  depends_on = [aiplatform_volcano.this]\n  name ", 1)
		addr, id := importOf(t, "aiplatform_volcano_queue")
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: acctest.Factories,
			Steps: []resource.TestStep{
				{Config: cfg, ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
				{Config: cfg, ResourceName: addr, ImportState: true, ImportStateId: id, ImportStateVerify: true},
			},
		})
	})
}

// examples/platform: Kueue and the queues that need its CRDs in one apply,
// created through the chart's webhooks and judged by the real Kueue (the
// pod runner runs the chart's manager): the ClusterQueues turn Active. An
// empty plan after it, destroy in reverse.
func TestAccPlatformExample(t *testing.T) {
	env := acctest.Env(t)
	vars := config.Variables{
		"kubeconfig":       config.StringVariable(env.Kubeconfig),
		"kueue_chart_path": config.StringVariable(kueueChart(t)),
	}
	research := object("kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "research")
	serving := object("kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "serving")
	researchLQ := object("kueue.x-k8s.io", "v1beta2", "localqueues", "default", "research")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config:          example(t, "platform/main.tf"),
				ConfigVariables: vars,
				Check: resource.ComposeAggregateTestCheckFunc(
					kueueDeployment.Equal(env, 1, "status", "readyReplicas"),
					research.Equal(env, "ai", "spec", "cohortName"),
					conditionTrue(env, research, "Active"),
					conditionTrue(env, serving, "Active"),
					conditionTrue(env, researchLQ, "Active"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(research.Gone(env), kueueDeployment.Gone(env)),
	})
}
