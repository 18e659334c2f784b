package kueue_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

// A destroy that runs out of timeouts.delete (the generic path of every
// object resource) fails naming the finalizer that holds the object, and
// keeps the resource in state: once the finalizer is gone, the next apply
// sees the object gone and creates it again, and the final destroy ends.
func TestAccObjectDeleteTimeout(t *testing.T) {
	env := acctest.Env(t)
	live := kueueObject("workloadpriorityclasses", "", "held")
	addr := "aiplatform_workload_priority_class.p"
	const hold = "test.aiplatform.dev/hold"
	config := acctest.Provider(env) + `
resource "aiplatform_workload_priority_class" "p" {
  name  = "held"
  value = 10
  timeouts {
    delete = "2s"
  }
}
`
	finalizers := func(fins ...any) func(obj map[string]any) {
		return func(obj map[string]any) { obj["metadata"].(map[string]any)["finalizers"] = fins }
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "timeouts.delete", "2s"),
					live.Equal(env, int64(10), "value"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				PreConfig: func() { live.Edit(t, env, "test", finalizers(hold)) },
				Config:    config,
				Destroy:   true,
				ExpectError: acctest.ErrorMatching("Deleting WorkloadPriorityClass held failed",
					"WorkloadPriorityClass held is still present after 2s (timeouts.delete)",
					fmt.Sprintf("finalizers still set: %q", hold), "It stays in state", `timeouts { delete = "…" }`),
			},
			{
				// Still in state: the refresh finds the object (marked for
				// deletion, held), and nothing is to be done.
				Config:   config,
				PlanOnly: true,
			},
			{
				// The finalizer removed, the object goes; the next apply
				// creates it again.
				PreConfig: func() {
					obj, err := live.Get(env)
					if err != nil || obj == nil || obj.GetDeletionTimestamp() == nil {
						t.Fatalf("after the failed destroy: %v, %v; want the object marked for deletion", obj, err)
					}
					live.Edit(t, env, "test", finalizers())
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: live.Equal(env, int64(10), "value"),
			},
		},
		CheckDestroy: live.Gone(env),
	})
}
