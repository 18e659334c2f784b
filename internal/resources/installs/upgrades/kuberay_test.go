package upgrades_test

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
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

// The KubeRay operator upgraded in place from the previous default (1.5.0)
// to the default, the newest the module proxy serves (1.6.2), under a live
// RayCluster (issue #29). 1.6 adds the
// RayCronJob CRD, which the plan lists (read from both charts' crds/) and
// the upgrade applies. The RayCluster keeps its UID and its head and worker
// pods (KubeRay's release notes restart nothing); the 1.6 operator
// reconciles it (a third worker when the group is scaled); the plan after
// is empty.
func TestAccKubeRayUpgradeWithLiveCluster(t *testing.T) {
	env := acctest.Env(t)
	ctx := context.Background()
	addr := "aiplatform_kuberay_operator.this"
	previous, current := podrunner.KubeRayPreviousVersion, podrunner.KubeRayVersion
	cronJobCRD := acctest.NewObject("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "raycronjobs.ray.io")
	cluster := acctest.NewObject("ray.io", "v1", "rayclusters", "default", "upgrade")
	pods := acctest.Pods{Namespace: "default", Selector: "ray.io/cluster=upgrade"}
	charts := map[string]string{previous: acctest.KubeRayChartAt(t, previous), current: acctest.KubeRayChart(t)}
	cfg := func(version string) string {
		return acctest.Provider(env) + fmt.Sprintf(`
resource "aiplatform_kuberay_operator" "this" {
  version     = %q
  chart       = { path = %q }
  timeout     = "10m" # the first run builds each operator alone (~2-6 min cold)
  remove_crds = true
}
`, strings.TrimPrefix(version, "v"), charts[version])
	}
	rayClusters := env.Dynamic.Resource(schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}).Namespace("default")
	workers := func(n int64) error {
		obj, err := rayClusters.Get(ctx, "upgrade", metav1.GetOptions{})
		if err != nil {
			return err
		}
		groups, _, _ := unstructured.NestedSlice(obj.Object, "spec", "workerGroupSpecs")
		groups[0].(map[string]any)["replicas"], groups[0].(map[string]any)["maxReplicas"] = n, n
		if err := unstructured.SetNestedSlice(obj.Object, groups, "spec", "workerGroupSpecs"); err != nil {
			return err
		}
		_, err = rayClusters.Update(ctx, obj, metav1.UpdateOptions{})
		return err
	}
	work := acctest.NewLiveWork(cluster, pods, 3)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg(previous),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "version", strings.TrimPrefix(previous, "v")),
					acctest.KubeRayDeployment.Equal(env, 1, "status", "readyReplicas"),
					acctest.KubeRayDeployment.Equal(env, "quay.io/kuberay/operator:"+previous, "spec", "template", "spec", "containers", "0", "image"),
					cronJobCRD.Gone(env),
					func(*terraform.State) error {
						rc := &unstructured.Unstructured{Object: map[string]any{
							"apiVersion": "ray.io/v1", "kind": "RayCluster",
							"metadata": map[string]any{"name": "upgrade", "namespace": "default"},
							"spec": map[string]any{
								"headGroupSpec": map[string]any{
									"rayStartParams": map[string]any{},
									"template": map[string]any{"spec": map[string]any{
										"containers": []any{map[string]any{"name": "ray-head", "image": "rayproject/ray:2.46.0"}}}},
								},
								"workerGroupSpecs": []any{map[string]any{
									"groupName": "cpu", "replicas": int64(2), "minReplicas": int64(0), "maxReplicas": int64(2),
									"rayStartParams": map[string]any{},
									"template": map[string]any{"spec": map[string]any{
										"containers": []any{map[string]any{"name": "ray-worker", "image": "rayproject/ray:2.46.0"}}}},
								}},
							},
						}}
						_, err := rayClusters.Create(ctx, rc, metav1.CreateOptions{})
						return err
					},
					work.Record(env),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config: cfg(current),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "version", strings.TrimPrefix(current, "v")),
					acctest.KubeRayDeployment.Equal(env, 1, "status", "readyReplicas"),
					acctest.KubeRayDeployment.Equal(env, "quay.io/kuberay/operator:"+current, "spec", "template", "spec", "containers", "0", "image"),
					cronJobCRD.Equal(env, "RayCronJob", "spec", "names", "kind"),
					work.Kept(env),
					func(*terraform.State) error {
						// The 1.6 operator reconciles it: a third worker.
						if err := workers(3); err != nil {
							return err
						}
						_, err := pods.Await(env, 2*time.Minute, acctest.RunningPods(4))
						return err
					},
				),
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(acctest.KubeRayDeployment.Gone(env), acctest.RayClusterCRD.Gone(env), cronJobCRD.Gone(env)),
	})
}
