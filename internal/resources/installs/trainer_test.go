package installs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

var (
	trainerConfig = object("", "v1", "configmaps", "kubeflow-system", "kubeflow-trainer-config")
	trainerCRD    = object("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "trainjobs.trainer.kubeflow.org")
	torchRuntime  = object("trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes", "", "torch-distributed")
	jaxRuntime    = object("trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes", "", "jax-distributed")
)

// trainerChart is charts/kubeflow-trainer of github.com/kubeflow/trainer/v2
// v2.3.0 in the module cache: the upstream chart at the registry's version
// (2.3.0), without its dependencies.
func trainerChart(t *testing.T) string { return acctest.TrainerChartAt(t, "v2.3.0") }

// trainerBlock is an aiplatform_trainer from the module's chart, with small
// resource requests unless extra sets values.
func trainerBlock(t *testing.T, name, extra string) string {
	values := `  values      = <<-EOT
    manager:
      resources:
        requests:
          cpu: 100m
          memory: 128Mi
  EOT`
	if strings.Contains(extra, "values") {
		values = ""
	}
	return fmt.Sprintf(`
resource "aiplatform_trainer" %q {
  chart       = { path = %q }
  timeout     = "3m"
  remove_crds = true
%s
%s
}
`, name, trainerChart(t), values, extra)
}

// trainJobAdmitted: a TrainJob on the default runtime torch-distributed,
// created through the chart's webhooks, becomes a JobSet (run by the JobSet
// controller) whose pods carry the torch environment the real Trainer
// injects; one that sets a reserved variable is denied by the webhook.
func trainJobAdmitted(t *testing.T, env *testenv.Env) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		if _, err := acctest.CreateThroughWebhooks(env, acctest.TrainJobsGVR, acctest.TrainJob("fit", "torch-distributed", 2)); err != nil {
			return fmt.Errorf("creating TrainJob fit: %w", err)
		}
		defer func() {
			bg := metav1.DeletePropagationBackground
			_ = env.Dynamic.Resource(acctest.TrainJobsGVR).Namespace("default").Delete(ctx, "fit", metav1.DeleteOptions{PropagationPolicy: &bg})
		}()
		var last string
		if err := acctest.Eventually(3*time.Minute, "JobSet fit and its 2 pods", func() (bool, string) {
			if _, err := env.Dynamic.Resource(acctest.JobSetsGVR).Namespace("default").Get(ctx, "fit", metav1.GetOptions{}); err != nil {
				return false, err.Error()
			}
			pods, err := acctest.Pods{Namespace: "default", Selector: "jobset.sigs.k8s.io/jobset-name=fit"}.List(env)
			if err != nil {
				return false, err.Error()
			}
			if len(pods) != 2 {
				return false, acctest.DescribePods(pods)
			}
			for _, p := range pods {
				last = fmt.Sprintf("pod %s: PET_NNODES=%q PET_MASTER_ADDR=%q PET_MASTER_PORT=%q PET_NODE_RANK=%q", p.Name,
					podEnv(p, "node", "PET_NNODES"), podEnv(p, "node", "PET_MASTER_ADDR"), podEnv(p, "node", "PET_MASTER_PORT"), podEnv(p, "node", "PET_NODE_RANK"))
				if podEnv(p, "node", "PET_NNODES") != "2" || podEnv(p, "node", "PET_MASTER_ADDR") != "fit-node-0-0.fit" ||
					podEnv(p, "node", "PET_MASTER_PORT") != "29500" || !strings.Contains(podEnv(p, "node", "PET_NODE_RANK"), "job-completion-index") {
					return false, last
				}
			}
			return true, last
		}); err != nil {
			return err
		}
		t.Log(last)
		_, err := acctest.CreateThroughWebhooks(env, acctest.TrainJobsGVR, acctest.TrainJob("bad", "torch-distributed", 2, map[string]any{"name": "PET_NNODES", "value": "9"}))
		if err == nil || !strings.Contains(err.Error(), "denied") || !strings.Contains(err.Error(), "reserved") {
			return fmt.Errorf("a TrainJob setting PET_NNODES: %v, want a denial by Trainer's webhook", err)
		}
		return nil
	}
}

func labelled(key, value string) func(map[string]any) error {
	return func(obj map[string]any) error {
		labels, _, _ := unstructured.NestedStringMap(obj, "metadata", "labels")
		if labels[key] != value {
			return fmt.Errorf("label %s=%q, want %q (labels %v)", key, labels[key], value, labels)
		}
		return nil
	}
}

// Kubeflow Trainer with JobSet from aiplatform_jobset_controller, default
// runtimes on: refused at plan without JobSet and with runtime switches in
// values, install_jobset refused with a chart that carries no JobSet (nothing
// created); installed with the runtimes, a TrainJob admitted and run; drift
// of the manager's configuration and of the runtimes (one deleted, one
// edited) planned and put back; a second JobSet and a second Trainer refused
// at plan; import; default runtimes switched off (deleted); uninstall.
func TestAccTrainer(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_trainer.this"
	jobset := acctest.JobSetBlock(t, "this", "")
	withRuntimes := `  depends_on       = [aiplatform_jobset_controller.this]
  default_runtimes = true`
	cfg := acctest.Provider(env) + jobset + trainerBlock(t, "this", withRuntimes)
	noRuntimes := acctest.Provider(env) + jobset + trainerBlock(t, "this", "  depends_on = [aiplatform_jobset_controller.this]")
	var start time.Time
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				// No JobSet in the cluster and none planned.
				PreConfig: func() {
					if crd, err := acctest.JobSetCRD.Get(env); err != nil || crd != nil {
						t.Fatal("JobSet's CRD is in the cluster before the test: an earlier test left it")
					}
				},
				Config:      acctest.Provider(env) + trainerBlock(t, "this", ""),
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("Kubeflow Trainer needs JobSet", "jobsets.jobset.x-k8s.io", "depends_on"),
			},
			{
				Config: acctest.Provider(env) + jobset + trainerBlock(t, "this", `  depends_on = [aiplatform_jobset_controller.this]
  values = "runtimes: { defaultEnabled: true, jaxDistributed: { enabled: true } }"`),
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("Trainer runtimes set in values", "runtimes.defaultEnabled, runtimes.jaxDistributed.enabled", "default_runtimes = true"),
			},
			{
				Config:      acctest.Provider(env) + trainerBlock(t, "this", "  install_jobset = true"),
				ExpectError: acctest.ErrorMatching("The chart carries no JobSet", "no JobSet subchart"),
			},
			{
				// Installed: nothing of the refused steps was.
				PreConfig: func() {
					if d, err := acctest.TrainerDeployment.Get(env); err != nil || d != nil {
						t.Fatal("a refused configuration installed the Trainer")
					}
					start = time.Now()
				},
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "kubeflow-system/kubeflow-trainer"),
					resource.TestCheckResourceAttr(addr, "version", "2.3.0"),
					resource.TestCheckResourceAttr(addr, "install_jobset", "false"),
					resource.TestCheckResourceAttr(addr, "drift.#", "0"),
					acctest.TrainerDeployment.Equal(env, 1, "status", "readyReplicas"),
					acctest.JobSetDeployment.Equal(env, 1, "status", "readyReplicas"),
					since(t, "JobSet + Trainer + default runtimes", &start),
					trainerCRD.Equal(env, "TrainJob", "spec", "names", "kind"),
					torchRuntime.Check(env, labelled("trainer.kubeflow.org/managed-by", "runtimes-installer")),
					jaxRuntime.Equal(env, int64(1), "spec", "mlPolicy", "numNodes"),
					trainJobAdmitted(t, env),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// Out of band: the manager's configuration edited, a default
				// runtime deleted and another edited.
				PreConfig: func() {
					trainerConfig.Edit(t, env, "kubectl-edit", func(obj map[string]any) {
						data := obj["data"].(map[string]any)
						doc := data["controller_manager_config.yaml"].(string)
						edited := strings.Replace(doc, "TrainJob.trainer.kubeflow.org: 5", "TrainJob.trainer.kubeflow.org: 7", 1)
						if edited == doc {
							t.Fatalf("no TrainJob.trainer.kubeflow.org: 5 in the manager configuration:\n%s", doc)
						}
						data["controller_manager_config.yaml"] = edited
					})
					jaxRuntime.Delete(t, env)
					torchRuntime.Edit(t, env, "kubectl-edit", func(obj map[string]any) {
						_ = unstructured.SetNestedField(obj, int64(4), "spec", "mlPolicy", "numNodes")
					})
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						acctest.DriftBefore{Addr: addr, Want: []string{
							`ConfigMap/kubeflow-system/kubeflow-trainer-config: data["controller_manager_config.yaml"].controller.groupKindConcurrency["TrainJob.trainer.kubeflow.org"] 7 → 5`,
							"ClusterTrainingRuntime/jax-distributed: deleted from the cluster",
							"ClusterTrainingRuntime/torch-distributed: spec.mlPolicy.numNodes 4 → 1",
						}},
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					jaxRuntime.Equal(env, int64(1), "spec", "mlPolicy", "numNodes"),
					torchRuntime.Equal(env, int64(1), "spec", "mlPolicy", "numNodes"),
					trainerConfig.Check(env, func(obj map[string]any) error {
						if !strings.Contains(fmt.Sprint(obj["data"]), "TrainJob.trainer.kubeflow.org: 5") {
							return fmt.Errorf("manager configuration not put back: %v", obj["data"])
						}
						return nil
					}),
				),
			},
			{
				// The JobSet subchart beside aiplatform_jobset_controller.
				Config:      acctest.Provider(env) + jobset + trainerBlock(t, "this", withRuntimes+"\n  install_jobset = true"),
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("A second JobSet controller", "install_jobset = true", "jobset-system/jobset"),
			},
			{
				Config:      cfg + trainerBlock(t, "other", `  namespace = "trainer-two"`+"\n"+`  depends_on = [aiplatform_jobset_controller.this]`),
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("A second Kubeflow Trainer", "kubeflow-system/kubeflow-trainer"),
			},
			{
				ResourceName: addr, ImportState: true, ImportStateId: "kubeflow-system/kubeflow-trainer", ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"chart", "chart.%", "chart.path", "chart.name", "chart.repository", "timeout", "remove_crds", "values"},
			},
			{
				// Default runtimes off: deleted, and nothing left to do.
				Config: noRuntimes,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					torchRuntime.Gone(env), jaxRuntime.Gone(env),
					resource.TestCheckResourceAttr(addr, "default_runtimes", "false"),
					acctest.TrainerDeployment.Equal(env, 1, "status", "readyReplicas"),
				),
			},
			{
				ResourceName: addr, ImportState: true, ImportStateId: "kubeflow-system/kubeflow-trainer", ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"chart", "chart.%", "chart.path", "chart.name", "chart.repository", "timeout", "remove_crds", "values"},
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(acctest.TrainerDeployment.Gone(env), trainerCRD.Gone(env), acctest.JobSetDeployment.Gone(env), acctest.JobSetCRD.Gone(env)),
	})
}
