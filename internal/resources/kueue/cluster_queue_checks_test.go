package kueue_test

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

// Admission checks per flavor, and a queue that holds no quota.
func TestAccClusterQueueAdmissionChecksStrategy(t *testing.T) {
	env := acctest.Env(t)
	live := kueueObject("clusterqueues", "", "gated")
	addr := "aiplatform_cluster_queue.gated"
	groups := `
  resource_groups = [{
    covered_resources = ["nvidia.com/gpu"]
    flavors = [
      { name = "h100", resources = [{ name = "nvidia.com/gpu", nominal_quota = "8" }] },
      { name = "a100", resources = [{ name = "nvidia.com/gpu", nominal_quota = "4" }] },
    ]
  }]`
	strategy := acctest.Provider(env) + `
resource "aiplatform_cluster_queue" "gated" {
  name = "gated"
  admission_checks_strategy = [
    { name = "provision", on_flavors = ["h100"] },
    { name = "budget" },
  ]` + groups + `
}
`
	names := acctest.Provider(env) + `
resource "aiplatform_cluster_queue" "gated" {
  name             = "gated"
  admission_checks = ["budget"]` + groups + `
}
`
	noQuota := acctest.Provider(env) + `
resource "aiplatform_cluster_queue" "gated" {
  name             = "gated"
  cohort           = "routing"
  admission_checks = ["budget"]
}
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: strategy,
				Check: resource.ComposeAggregateTestCheckFunc(
					live.Equal(env, "provision", "spec", "admissionChecksStrategy", "admissionChecks", "0", "name"),
					live.Equal(env, "[h100]", "spec", "admissionChecksStrategy", "admissionChecks", "0", "onFlavors"),
					live.Equal(env, "budget", "spec", "admissionChecksStrategy", "admissionChecks", "1", "name"),
					live.Equal(env, nil, "spec", "admissionChecksStrategy", "admissionChecks", "1", "onFlavors"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{ResourceName: addr, ImportState: true, ImportStateVerify: true, ImportStateId: "gated"},
			{
				// Someone makes the provision check apply to every flavor by
				// hand: planned and taken back. (on_flavors is a set to Kueue:
				// a flavor added by hand would merge with the configured ones,
				// which the plan's live-change preview refuses.)
				PreConfig: func() {
					live.Edit(t, env, "someone-else", func(obj map[string]any) {
						checks := obj["spec"].(map[string]any)["admissionChecksStrategy"].(map[string]any)["admissionChecks"].([]any)
						delete(checks[0].(map[string]any), "onFlavors")
					})
				},
				Config: acctest.Provider(env, "force_conflicts = true") + strategy[len(acctest.Provider(env)):],
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: live.Equal(env, "[h100]", "spec", "admissionChecksStrategy", "admissionChecks", "0", "onFlavors"),
			},
			{
				Config: names,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					live.Equal(env, "[map[name:budget]]", "spec", "admissionChecksStrategy", "admissionChecks"),
				),
			},
			{
				// Without resource_groups the queue keeps no quota: the
				// groups are removed from the live object, in place.
				Config: noQuota,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					live.Equal(env, nil, "spec", "resourceGroups"),
					live.Equal(env, "routing", "spec", "cohortName"),
				),
			},
			{ResourceName: addr, ImportState: true, ImportStateVerify: true, ImportStateId: "gated"},
			{
				PreConfig: func() { live.Delete(t, env) },
				Config:    noQuota,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: live.Equal(env, "routing", "spec", "cohortName"),
			},
		},
		CheckDestroy: live.Gone(env),
	})
}

// A ClusterQueue without resourceGroups, created with kubectl from upstream
// YAML, adopted with an import block and -generate-config-out: the
// generated configuration plans no change, and nothing is written.
func TestAccClusterQueueAdoptWithoutQuota(t *testing.T) {
	env := acctest.Env(t)
	live := kueueObject("clusterqueues", "", "router")
	ctx := context.Background()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
		"metadata": map[string]any{"name": "router"},
		"spec": map[string]any{
			"cohortName":        "platform",
			"namespaceSelector": map[string]any{},
			"admissionChecksStrategy": map[string]any{"admissionChecks": []any{
				map[string]any{"name": "multikueue", "onFlavors": []any{"remote"}},
			}},
		},
	}}
	created, err := env.Dynamic.Resource(live.GVR).Create(ctx, obj, metav1.CreateOptions{FieldManager: "kubectl-create"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Dynamic.Resource(live.GVR).Delete(ctx, "router", metav1.DeleteOptions{}) })
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{{
			Config:          acctest.Provider(env),
			ResourceName:    "aiplatform_cluster_queue.router",
			ImportState:     true,
			ImportStateKind: resource.ImportBlockWithID,
			ImportStateId:   "router",
			GenerateConfig:  true,
			ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue("aiplatform_cluster_queue.router", tfjsonpath.New("cohort"), knownvalue.StringExact("platform")),
				plancheck.ExpectKnownValue("aiplatform_cluster_queue.router", tfjsonpath.New("resource_groups"), knownvalue.Null()),
			}},
		}},
	})
	after, err := live.Get(env)
	if err != nil || after == nil {
		t.Fatalf("the adopted queue is gone: %v", err)
	}
	if after.GetResourceVersion() != created.GetResourceVersion() {
		t.Errorf("adopting wrote to the queue: resourceVersion %s → %s", created.GetResourceVersion(), after.GetResourceVersion())
	}
}
