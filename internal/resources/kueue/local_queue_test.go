package kueue_test

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

func TestAccLocalQueue(t *testing.T) {
	env := acctest.Env(t)
	live := kueueObject("localqueues", "default", "team-a")
	config := func(cq string) string {
		return acctest.Provider(env) + `
resource "aiplatform_local_queue" "q" {
  name          = "team-a"
  namespace     = "default"
  cluster_queue = "` + cq + `"
}
`
	}
	addr := "aiplatform_local_queue.q"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: config("cq-one"),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "default/team-a"),
					live.Equal(env, "cq-one", "spec", "clusterQueue"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// Kueue makes spec.clusterQueue immutable: the plan replaces
				// instead of failing at apply.
				Config: config("cq-two"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: live.Equal(env, "cq-two", "spec", "clusterQueue"),
			},
			{ResourceName: addr, ImportState: true, ImportStateVerify: true, ImportStateId: "default/team-a"},
			{ResourceName: addr, ImportState: true, ImportStateId: "team-a", ExpectError: regexp.MustCompile(`expected "namespace/name"`)},
			{Config: config("cq-two"), PlanOnly: true},
			{
				Config: acctest.Provider(env) + `
resource "aiplatform_local_queue" "q" {
  name          = "team-a"
  namespace     = "Default"
  cluster_queue = "cq-two"
}
`,
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`namespace\s+= "Default"`),
			},
			{
				PreConfig: func() { live.Delete(t, env) },
				Config:    config("cq-two"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: live.Equal(env, "cq-two", "spec", "clusterQueue"),
			},
		},
		CheckDestroy: live.Gone(env),
	})
}
