package installs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

var (
	kuberayDeployment = object("apps", "v1", "deployments", "kuberay-system", "kuberay-operator")
	rayClusterCRD     = object("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "rayclusters.ray.io")
)

// kuberayChart assembles the stand-in KubeRay chart in a temporary
// directory: this repository's testdata/charts/kuberay-operator (the
// operator's Deployment, RBAC and Service) plus KubeRay's own CRDs, copied
// from the ray-operator module (never committed to this repository).
func kuberayChart(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	crds, err := testenv.ModuleDir(context.Background(), "github.com/ray-project/kuberay/ray-operator", "v1.5.0")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "kuberay-operator")
	copyDir(t, filepath.Join(root, "testdata", "charts", "kuberay-operator"), dir)
	copyDir(t, filepath.Join(crds, "config", "crd", "bases"), filepath.Join(dir, "crds"))
	return dir
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Install (CRDs and operator, ready), drift of the operator's Deployment
// put back by the next apply, import, an upgrade through values, and
// uninstall removing the CRDs.
func TestAccKubeRayOperator(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_kuberay_operator.this"
	chart := kuberayChart(t)
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
					resource.TestCheckResourceAttr(addr, "version", "1.5.0"),
					resource.TestCheckResourceAttr(addr, "status", "deployed"),
					resource.TestCheckResourceAttr(addr, "drift.#", "0"),
					kuberayDeployment.Equal(env, 1, "status", "readyReplicas"),
					rayClusterCRD.Equal(env, "RayCluster", "spec", "names", "kind"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				PreConfig: func() {
					kuberayDeployment.Edit(t, env, "kubectl-edit", func(obj map[string]any) {
						obj["spec"].(map[string]any)["replicas"] = int64(3)
					})
				},
				Config: cfg(""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						driftBefore{addr, []string{"Deployment/kuberay-system/kuberay-operator: spec.replicas 3 → 1"}},
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: kuberayDeployment.Equal(env, 1, "spec", "replicas"),
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
					kuberayDeployment.Equal(env, 2, "status", "readyReplicas"),
					resource.TestCheckResourceAttr(addr, "revision", "3"),
				),
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(kuberayDeployment.Gone(env), rayClusterCRD.Gone(env)),
	})
}

// examples/resources/aiplatform_kuberay_operator with the stand-in chart.
func TestAccKubeRayOperatorExample(t *testing.T) {
	env := acctest.Env(t)
	cfg := acctest.Provider(env) + withChart(t, example(t, "resources/aiplatform_kuberay_operator/resource.tf"), "aiplatform_kuberay_operator",
		fmt.Sprintf("  chart = { path = %q }\n  remove_crds = true", kuberayChart(t)))
	addr, id := importOf(t, "aiplatform_kuberay_operator")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config:           cfg,
				Check:            kuberayDeployment.Equal(env, "100m", "spec", "template", "spec", "containers", "0", "resources", "requests", "cpu"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{Config: cfg, ResourceName: addr, ImportState: true, ImportStateId: id, ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"chart", "chart.%", "chart.path", "chart.name", "chart.repository", "timeout", "values", "remove_crds", "revision"}},
		},
		CheckDestroy: kuberayDeployment.Gone(env),
	})
}
