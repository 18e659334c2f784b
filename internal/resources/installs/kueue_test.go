package installs_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

// frameworksOf reads integrations.frameworks from the live manager config.
func frameworksOf(obj map[string]any) string {
	data, _ := obj["data"].(map[string]any)
	doc, _ := data["controller_manager_config.yaml"].(string)
	var cfg struct {
		ManageJobsWithoutQueueName bool `json:"manageJobsWithoutQueueName"`
		Integrations               struct {
			Frameworks []string `json:"frameworks"`
		} `json:"integrations"`
	}
	_ = yaml.Unmarshal([]byte(doc), &cfg)
	return fmt.Sprintf("%v manage=%v", cfg.Integrations.Frameworks, cfg.ManageJobsWithoutQueueName)
}

func wantFrameworks(want string) func(map[string]any) error {
	return func(obj map[string]any) error {
		if got := frameworksOf(obj); got != want {
			return fmt.Errorf("live Kueue configuration: %s, want %s", got, want)
		}
		return nil
	}
}

// Install, drift (Deployment scaled and manager configuration edited out of
// band), re-apply, upgrade, a failed upgrade that rolls back, import,
// uninstall keeping the CRDs: with Kueue v0.17.0's chart (its manager run by
// the pod runner).
func TestAccKueue(t *testing.T) {
	testAccKueue(t, "v0.17.0", `  feature_gates = { TopologyAwareScheduling = true }
  wait_for_pods_ready = { enable = true, timeout = "7m" }`, nil)
}

// The same with v0.19.2's chart and manager (the provider's default), with
// every typed section of the manager configuration set: the real v0.19.2
// manager starts with them (it refuses a configuration it cannot decode),
// and an import reads them back. Then WaitForPodsReady turned off, which on
// v0.19 (on by default) is the feature gate DisableWaitForPodsReady.
func TestAccKueue019(t *testing.T) {
	env := acctest.Env(t)
	off := acctest.Provider(env) + acctest.KueueBlockAt(t, "v0.19.2", `  replicas = 2
  integrations = ["batch/job", "jobset.x-k8s.io/jobset"]
  wait_for_pods_ready = { enable = false }`)
	addr := "aiplatform_kueue.this"
	testAccKueue(t, "v0.19.2", `  feature_gates = { TopologyAwareScheduling = true, AdmissionFairSharing = true }
  wait_for_pods_ready = {
    enable             = true
    timeout            = "7m"
    block_admission    = true
    recovery_timeout   = "2m"
    requeuing_strategy = { timestamp = "Creation", backoff_limit_count = 5, backoff_base_seconds = 30, backoff_max_seconds = 600 }
  }
  fair_sharing           = { preemption_strategies = ["LessThanInitialShare"] }
  admission_fair_sharing = { usage_half_life_time = "168h", usage_sampling_interval = "5m", resource_weights = { "nvidia.com/gpu" = 10, cpu = 0.5 } }
  multikueue             = { gc_interval = "2m", worker_lost_timeout = "10m", origin = "platform" }`,
		[]resource.TestStep{{
			Config: off,
			ConfigPlanChecks: resource.ConfigPlanChecks{
				PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
				PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
			},
			Check: resource.ComposeAggregateTestCheckFunc(
				kueueDeployment.Equal(env, 2, "status", "readyReplicas"),
				kueueDeployment.Check(env, func(obj map[string]any) error {
					if !strings.Contains(fmt.Sprint(obj["spec"]), "--feature-gates=DisableWaitForPodsReady=true") {
						return fmt.Errorf("WaitForPodsReady off on v0.19 without the feature gate DisableWaitForPodsReady: %v", obj["spec"])
					}
					return nil
				}),
				kueueConfig.Check(env, func(obj map[string]any) error {
					if strings.Contains(fmt.Sprint(obj["data"]), "waitForPodsReady") {
						return fmt.Errorf("waitForPodsReady still in the manager configuration: %v", obj["data"])
					}
					return nil
				}),
			),
		}, {
			ResourceName: addr, ImportState: true, ImportStateId: "kueue-system/kueue", ImportStateVerify: true,
			ImportStateVerifyIgnore: []string{"chart", "chart.%", "chart.path", "chart.name", "chart.repository", "timeout", "revision"},
		}})
}

// testAccKueue is TestAccKueue with a chart version, the typed settings of
// the upgrade step, and steps after it.
func testAccKueue(t *testing.T, version, settings string, more []resource.TestStep) {
	env := acctest.Env(t)
	addr := "aiplatform_kueue.this"
	cfg := func(extra string) string { return acctest.Provider(env) + acctest.KueueBlockAt(t, version, extra) }
	base := cfg("")
	scaled := cfg(`  replicas = 2
  integrations = ["batch/job", "jobset.x-k8s.io/jobset"]
` + settings)
	broken := cfg(`  replicas = 2
  integrations = ["batch/job", "jobset.x-k8s.io/jobset"]
` + settings + `
  values = <<-EOT
    controllerManager:
      manager:
        resources:
          limits:
            cpu: lots
  EOT`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: append([]resource.TestStep{
			{
				// Installed, every object ready, and no drift right after.
				Config: base,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "kueue-system/kueue"),
					resource.TestCheckResourceAttr(addr, "revision", "1"),
					resource.TestCheckResourceAttr(addr, "status", "deployed"),
					resource.TestCheckResourceAttr(addr, "drift.#", "0"),
					kueueDeployment.Equal(env, 1, "status", "readyReplicas"),
					kueueConfig.Check(env, wantFrameworks("[batch/job] manage=false")),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// Someone scales the manager and turns on the pod integration by hand.
				PreConfig: func() {
					kueueDeployment.Edit(t, env, "kubectl-edit", func(obj map[string]any) {
						obj["spec"].(map[string]any)["replicas"] = int64(3)
					})
					kueueConfig.Edit(t, env, "kubectl-edit", func(obj map[string]any) {
						data := obj["data"].(map[string]any)
						doc := data["controller_manager_config.yaml"].(string)
						data["controller_manager_config.yaml"] = strings.Replace(doc, "- batch/job", "- batch/job\n  - pod", 1)
					})
				},
				Config: base,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						acctest.DriftBefore{Addr: addr, Want: []string{
							"Deployment/kueue-system/kueue-controller-manager: spec.replicas 3 → 1",
							`ConfigMap/kueue-system/kueue-manager-config: data["controller_manager_config.yaml"].integrations.frameworks ["batch/job","pod"] → ["batch/job"]`,
						}},
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					kueueDeployment.Equal(env, 1, "spec", "replicas"),
					kueueConfig.Check(env, wantFrameworks("[batch/job] manage=false")),
					resource.TestCheckResourceAttr(addr, "revision", "2"),
				),
			},
			{
				// An upgrade of the typed settings.
				Config: scaled,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					kueueDeployment.Equal(env, 2, "spec", "replicas"),
					kueueDeployment.Equal(env, 2, "status", "readyReplicas"),
					kueueDeployment.Check(env, func(obj map[string]any) error {
						if !regexp.MustCompile(`--feature-gates=\S*TopologyAwareScheduling=true`).MatchString(fmt.Sprint(obj["spec"])) {
							return fmt.Errorf("feature gate not passed to the manager")
						}
						return nil
					}),
					kueueConfig.Check(env, wantFrameworks("[batch/job jobset.x-k8s.io/jobset] manage=false")),
					kueueConfig.Check(env, func(obj map[string]any) error {
						if !strings.Contains(fmt.Sprint(obj["data"]), "timeout: 7m") {
							return fmt.Errorf("waitForPodsReady not in the manager configuration: %v", obj["data"])
						}
						return nil
					}),
				),
			},
			{
				// An upgrade the API server refuses: rolled back, and it says why.
				Config:      broken,
				ExpectError: acctest.ErrorMatching("Upgrading Kueue failed", "rolled back to revision 3", "quantities must match the regular expression"),
			},
			{
				// The previous release is in place: nothing to do for its configuration.
				Config:   scaled,
				PlanOnly: true,
				Check:    kueueDeployment.Equal(env, 2, "spec", "replicas"),
			},
			{
				ResourceName: addr, ImportState: true, ImportStateId: "kueue-system/kueue", ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"chart", "chart.%", "chart.path", "chart.name", "chart.repository", "timeout", "revision"},
			},
			{
				ResourceName: addr, ImportState: true, ImportStateId: "kueue",
				ExpectError: acctest.ErrorMatching(`expected "namespace/release"`),
			},
		}, more...),
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			kueueDeployment.Gone(env),
			kueueCRD.Check(env, func(map[string]any) error { return nil }), // CRDs stay
			// The cluster runs the ClusterRole aggregation controller, which
			// re-creates an aggregated role deleted with its sources; the
			// destroy deleted it again instead of waiting for it forever or
			// leaving it behind.
			kueueBatchAdmin.Gone(env), kueueBatchUser.Gone(env),
		),
	})
}

// Bad input fails at plan with the attribute's path, and nothing is
// applied: a local chart path that holds no chart, a local chart of another
// version than planned, bad values and durations.
func TestAccKueueInvalid(t *testing.T) {
	env := acctest.Env(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config:      acctest.Provider(env) + `resource "aiplatform_kueue" "x" { chart = { path = "/nonexistent/kueue" } }`,
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("Cannot load the Kueue chart", `with aiplatform_kueue.x,`, "/nonexistent/kueue"),
			},
			{
				Config:      acctest.Provider(env) + `resource "aiplatform_kueue" "x" { values = "[not, a, map" }`,
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("values is not a YAML map"),
			},
			{
				Config:      acctest.Provider(env) + `resource "aiplatform_kueue" "x" { timeout = "soon" }`,
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching(`"soon" is not a duration`),
			},
			{
				Config:      acctest.Provider(env) + fmt.Sprintf("resource \"aiplatform_kueue\" \"x\" {\n  version = \"0.16.0\"\n  chart = { path = %q }\n}\n", kueueChart(t)),
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("Not the Kueue chart of this version", "is version 0.17.0, not 0.16.0", `set version = "0.17.0"`),
			},
			{
				Config:      acctest.Provider(env) + `resource "aiplatform_kueue" "x" { chart = { path = "/x", name = "kueue" } }`,
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("set either path, or repository and name, not both"),
			},
			// The manager configuration's sections.
			{
				Config:      acctest.Provider(env) + `resource "aiplatform_kueue" "x" { wait_for_pods_ready = { enable = false, block_admission = true } }`,
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("wait_for_pods_ready.block_admission needs enable = true"),
			},
			{
				Config:      acctest.Provider(env) + `resource "aiplatform_kueue" "x" { wait_for_pods_ready = { enable = true, recovery_timeout = "-1m" } }`,
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching(`"-1m" is not a duration of 0s or more`),
			},
			{
				Config:      acctest.Provider(env) + `resource "aiplatform_kueue" "x" { wait_for_pods_ready = { enable = true, requeuing_strategy = { timestamp = "Admission" } } }`,
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching(`wait_for_pods_ready.requeuing_strategy.timestamp`, "Eviction"),
			},
			{
				// Kueue's manager does not start with fairSharing but no strategy.
				Config:      acctest.Provider(env) + `resource "aiplatform_kueue" "x" { fair_sharing = { preemption_strategies = [] } }`,
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching(`preemption_strategies list must contain at least 1 elements`),
			},
			{
				Config:      acctest.Provider(env) + `resource "aiplatform_kueue" "x" { fair_sharing = { preemption_strategies = ["Fair"] } }`,
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching(`LessThanOrEqualToFinalShare`),
			},
			{
				Config:      acctest.Provider(env) + `resource "aiplatform_kueue" "x" { admission_fair_sharing = { usage_half_life_time = "a week" } }`,
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching(`"a week" is not a duration`),
			},
			{
				Config:      acctest.Provider(env) + `resource "aiplatform_kueue" "x" { multikueue = { incremental_step_size = 2 } }`,
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("multikueue.incremental_step_size is the step of the incremental dispatcher"),
			},
		},
	})
}
