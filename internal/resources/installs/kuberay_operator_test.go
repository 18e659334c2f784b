package installs_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
)

var ()

// Install (CRDs and operator, ready), drift of the operator's Deployment
// put back by the next apply, import, an upgrade through values, and
// uninstall removing the CRDs.
func TestAccKubeRayOperator(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_kuberay_operator.this"
	chart := acctest.KubeRayChart(t)
	cfg := func(extra string) string {
		return acctest.Provider(env) + fmt.Sprintf(`
resource "aiplatform_kuberay_operator" "this" {
  chart       = { path = %q }
  timeout     = "3m"
  remove_crds = true
%s
}
`, chart, extra)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg(""),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "kuberay-system/kuberay-operator"),
					resource.TestCheckResourceAttr(addr, "version", catalog.KubeRay.DefaultVersion),
					resource.TestCheckResourceAttr(addr, "status", "deployed"),
					resource.TestCheckResourceAttr(addr, "drift.#", "0"),
					acctest.KubeRayDeployment.Equal(env, 1, "status", "readyReplicas"),
					acctest.RayClusterCRD.Equal(env, "RayCluster", "spec", "names", "kind"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				PreConfig: func() {
					acctest.KubeRayDeployment.Edit(t, env, "kubectl-edit", func(obj map[string]any) {
						obj["spec"].(map[string]any)["replicas"] = int64(3)
					})
				},
				Config: cfg(""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						acctest.DriftBefore{Addr: addr, Want: []string{"Deployment/kuberay-system/kuberay-operator: spec.replicas 3 → 1"}},
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: acctest.KubeRayDeployment.Equal(env, 1, "spec", "replicas"),
			},
			{
				ResourceName: addr, ImportState: true, ImportStateId: "kuberay-system/kuberay-operator", ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"chart", "chart.%", "chart.path", "chart.name", "chart.repository", "timeout", "remove_crds"},
			},
			{
				Config: cfg(`  values  = "replicas: 2\n"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					acctest.KubeRayDeployment.Equal(env, 2, "status", "readyReplicas"),
					resource.TestCheckResourceAttr(addr, "revision", "3"),
				),
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(acctest.KubeRayDeployment.Gone(env), acctest.RayClusterCRD.Gone(env)),
	})
}

// examples/resources/aiplatform_kuberay_operator with the stand-in chart.
func TestAccKubeRayOperatorExample(t *testing.T) {
	env := acctest.Env(t)
	cfg := acctest.Provider(env) + withChart(t, example(t, "resources/aiplatform_kuberay_operator/resource.tf"), "aiplatform_kuberay_operator",
		fmt.Sprintf("  chart = { path = %q }\n  remove_crds = true", acctest.KubeRayChart(t)))
	addr, id := importOf(t, "aiplatform_kuberay_operator")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config:           cfg,
				Check:            acctest.KubeRayDeployment.Equal(env, "100m", "spec", "template", "spec", "containers", "0", "resources", "requests", "cpu"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{Config: cfg, ResourceName: addr, ImportState: true, ImportStateId: id, ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"chart", "chart.%", "chart.path", "chart.name", "chart.repository", "timeout", "values", "remove_crds", "revision"}},
		},
		CheckDestroy: acctest.KubeRayDeployment.Gone(env),
	})
}
