package kserve_test

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
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

// KServe upgraded in place from the release before the default (0.19.0) to
// the default (0.20.0) under a live InferenceService, as a platform team
// does on day 2 (issue #29). 0.20's InferenceService CRD adds fields
// (spec.predictor.storageContainerName among them) that reach the cluster
// with the CRD release. The InferenceService keeps its UID and its predictor
// pod; the 0.20 manager reconciles it (a second predictor pod when
// minReplicas goes to 2, and its finalizer when the InferenceService is
// deleted); the plan after is empty.
func TestAccKServeUpgradeWithLiveInferenceService(t *testing.T) {
	env := acctest.Env(t)
	ctx := context.Background()
	addr := "aiplatform_kserve.this"
	previous, current := podrunner.KServePreviousVersion, podrunner.KServeVersion
	cfg := func(version string) string {
		// The first run builds KServe 0.19.0's manager alone.
		return acctest.Provider(env) + kserveBlockAt(t, "this", version, "10m", "")
	}
	isvcs := env.Dynamic.Resource(inferenceServicesGVR).Namespace("default")
	isvc := acctest.NewObject(inferenceServicesGVR.Group, inferenceServicesGVR.Version, inferenceServicesGVR.Resource, "default", "upgrade")
	pods := acctest.Pods{Namespace: "default", Selector: "serving.kserve.io/inferenceservice=upgrade"}
	work := acctest.NewLiveWork(isvc, pods, 1)
	minReplicas := func(n int64) error {
		obj, err := isvcs.Get(ctx, "upgrade", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedField(obj.Object, n, "spec", "predictor", "minReplicas"); err != nil {
			return err
		}
		_, err = isvcs.Update(ctx, obj, metav1.UpdateOptions{})
		return err
	}
	crdHas := func(field string, want bool) resource.TestCheckFunc {
		return kserveCRD.Check(env, func(obj map[string]any) error {
			if got := strings.Contains(fmt.Sprint(obj["spec"]), field+":"); got != want {
				return fmt.Errorf("the InferenceService CRD has %s: %v, want %v", field, got, want)
			}
			return nil
		})
	}
	t.Cleanup(func() { _ = isvcs.Delete(context.Background(), "upgrade", metav1.DeleteOptions{}) })
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg(previous),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "version", previous),
					kserveDeployment.Equal(env, 1, "status", "readyReplicas"),
					kserveDeployment.Equal(env, "kserve/kserve-controller:"+previous, "spec", "template", "spec", "containers", "0", "image"),
					crdHas("storageContainerName", false),
					func(*terraform.State) error {
						_, err := acctest.CreateThroughWebhooks(env, inferenceServicesGVR, &unstructured.Unstructured{Object: map[string]any{
							"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
							// Without an autoscaler KServe sizes the predictor's
							// Deployment from minReplicas itself (with the default,
							// HPA, it leaves replicas to an HPA this cluster has no
							// metrics for).
							"metadata": map[string]any{"name": "upgrade", "namespace": "default",
								"annotations": map[string]any{"serving.kserve.io/autoscalerClass": "none"}},
							"spec": map[string]any{"predictor": map[string]any{
								"minReplicas": int64(1),
								"containers":  []any{map[string]any{"name": "kserve-container", "image": "registry.example/echo:1"}},
							}},
						}})
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
					resource.TestCheckResourceAttr(addr, "version", current),
					kserveDeployment.Equal(env, 1, "status", "readyReplicas"),
					kserveDeployment.Equal(env, "kserve/kserve-controller:"+current, "spec", "template", "spec", "containers", "0", "image"),
					crdHas("storageContainerName", true),
					work.Kept(env),
					func(*terraform.State) error {
						// The 0.20 manager reconciles it: a second predictor pod.
						if err := minReplicas(2); err != nil {
							return err
						}
						_, err := pods.Await(env, 2*time.Minute, acctest.RunningPods(2))
						return err
					},
					func(*terraform.State) error {
						// Gone before the destroy: the manager removes its
						// finalizer, and the CRD could not go with it there.
						if err := isvcs.Delete(ctx, "upgrade", metav1.DeleteOptions{}); err != nil {
							return err
						}
						return acctest.Eventually(2*time.Minute, "InferenceService upgrade deleted", func() (bool, string) {
							obj, err := isvc.Get(env)
							return err == nil && obj == nil, fmt.Sprint(obj, err)
						})
					},
				),
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(kserveDeployment.Gone(env), kserveCRD.Gone(env)),
	})
}
