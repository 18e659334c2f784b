package kueue_test

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

func TestAccWorkloadPriorityClass(t *testing.T) {
	env := acctest.Env(t)
	live := kueueObject("workloadpriorityclasses", "", "production")
	config := func(value, desc string) string {
		return acctest.Provider(env) + `
resource "aiplatform_workload_priority_class" "p" {
  name        = "production"
  value       = ` + value + `
  description = ` + desc + `
}
`
	}
	addr := "aiplatform_workload_priority_class.p"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: config("1000", `"serving traffic"`),
				Check: resource.ComposeAggregateTestCheckFunc(
					live.Equal(env, int64(1000), "value"),
					live.Equal(env, "serving traffic", "description"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config: config("-5", "null"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					live.Equal(env, int64(-5), "value"),
					live.Equal(env, nil, "description"),
				),
			},
			{ResourceName: addr, ImportState: true, ImportStateVerify: true, ImportStateId: "production"},
			{Config: config("-5", "null"), PlanOnly: true},
			{
				Config:      config("3000000000", "null"),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)value.*between`),
			},
			{
				PreConfig: func() { live.Delete(t, env) },
				Config:    config("-5", "null"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: live.Equal(env, int64(-5), "value"),
			},
		},
		CheckDestroy: live.Gone(env),
	})
}
