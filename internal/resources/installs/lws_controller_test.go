package installs_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

var (
	lwsWebhooks = object("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "", "lws-validating-webhook-configuration")
)

// lwsChart is charts/lws of sigs.k8s.io/lws at the default version in the
// module cache: the upstream chart itself (its version there is 0.1.0).
func lwsChart(t *testing.T) string { return acctest.LWSChartAt(t, testenv.LWSVersion) }

// LWS's own chart: install (CRD, webhooks, controller ready), drift of the
// controller's Deployment put back, import, uninstall removing the CRD. The
// chart's controller pods are run by testenv's pod runner as the real LWS
// controller (its readiness is the Deployment's); LeaderWorkerSets through
// the chart's webhooks are tested in internal/testenv
// (TestPodRunnerOperatorCharts).
func TestAccLWSController(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_lws_controller.this"
	cfg := acctest.Provider(env) + acctest.LWSControllerBlock(lwsChart(t), "")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "lws-system/lws"),
					resource.TestCheckResourceAttr(addr, "status", "deployed"),
					resource.TestCheckResourceAttr(addr, "drift.#", "0"),
					acctest.LWSDeployment.Equal(env, 1, "status", "readyReplicas"),
					acctest.LWSDeployment.Equal(env, "100m", "spec", "template", "spec", "containers", "0", "resources", "requests", "cpu"),
					acctest.LWSCRD.Equal(env, "LeaderWorkerSet", "spec", "names", "kind"),
					lwsWebhooks.Equal(env, "lws-webhook-service", "webhooks", "0", "clientConfig", "service", "name"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				PreConfig: func() {
					acctest.LWSDeployment.Edit(t, env, "kubectl-edit", func(obj map[string]any) {
						obj["spec"].(map[string]any)["replicas"] = int64(2)
					})
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						acctest.DriftBefore{Addr: addr, Want: []string{"Deployment/lws-system/lws-controller-manager: spec.replicas 2 → 1"}},
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: acctest.LWSDeployment.Equal(env, 1, "spec", "replicas"),
			},
			{
				ResourceName: addr, ImportState: true, ImportStateId: "lws-system/lws", ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"chart", "chart.%", "chart.path", "chart.name", "chart.repository", "timeout", "remove_crds", "values"},
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(acctest.LWSDeployment.Gone(env), acctest.LWSCRD.Gone(env)),
	})
}

// examples/resources/aiplatform_lws_controller with LWS's chart from the
// module cache (its version there is 0.1.0, not the registry's 0.9.0).
func TestAccLWSControllerExample(t *testing.T) {
	env := acctest.Env(t)
	tf := strings.Replace(example(t, "resources/aiplatform_lws_controller/resource.tf"), `version = "0.9.0"`, `version = "0.1.0"`, 1)
	if !strings.Contains(tf, `version = "0.1.0"`) {
		t.Fatal(`the example no longer says version = "0.9.0"`)
	}
	cfg := acctest.Provider(env) + withChart(t, tf, "aiplatform_lws_controller",
		fmt.Sprintf("  chart = { path = %q }\n  remove_crds = true", lwsChart(t)))
	addr, id := importOf(t, "aiplatform_lws_controller")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config:           cfg,
				Check:            acctest.LWSDeployment.Equal(env, 1, "status", "readyReplicas"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{Config: cfg, ResourceName: addr, ImportState: true, ImportStateId: id, ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"chart", "chart.%", "chart.path", "chart.name", "chart.repository", "timeout", "values", "remove_crds", "revision"}},
		},
		CheckDestroy: acctest.LWSDeployment.Gone(env),
	})
}

// An install that runs out of timeouts.create fails naming that timeout and
// how to raise it, and leaves nothing behind (the failed release is
// uninstalled, as Helm's --atomic does); the deprecated timeout still
// applies where the block does not set an operation, and the block wins
// over it where it does.
func TestAccInstallTimeouts(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_lws_controller.this"
	release := object("", "v1", "secrets", "lws-system", "sh.helm.release.v1.lws.v1")
	cfg := func(timeouts string) string {
		return acctest.Provider(env) + fmt.Sprintf(`
resource "aiplatform_lws_controller" "this" {
  chart       = { path = %q }
  version     = "0.1.0"
  remove_crds = true
%s
}
`, lwsChart(t), timeouts)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				// 1 s cannot see the controller ready; the deprecated
				// timeout's 3m does not rescue it.
				Config: cfg(`  timeout = "3m"
  timeouts {
    create = "1s"
  }`),
				ExpectError: acctest.ErrorMatching("Installing LeaderWorkerSet failed", "the failed release was removed",
					"not done within 1s", `timeouts { create = "…" }`),
			},
			{
				PreConfig: func() {
					if err := resource.ComposeAggregateTestCheckFunc(release.Gone(env), acctest.LWSDeployment.Gone(env))(nil); err != nil {
						t.Fatalf("the failed install left something behind: %v", err)
					}
				},
				// timeouts sets only delete: create waits as long as the
				// deprecated timeout says.
				Config: cfg(`  timeout = "3m"
  timeouts {
    delete = "2m"
  }`),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "status", "deployed"),
					resource.TestCheckResourceAttr(addr, "timeouts.delete", "2m"),
					acctest.LWSDeployment.Equal(env, 1, "status", "readyReplicas"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// Changing only timeouts is an in-place update that
				// touches no object.
				Config: cfg(`  timeout = "3m"
  timeouts {
    delete = "3m"
    update = "3m"
  }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.TestCheckResourceAttr(addr, "timeouts.update", "3m"),
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(acctest.LWSDeployment.Gone(env), acctest.LWSCRD.Gone(env)),
	})
}
