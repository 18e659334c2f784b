package kueue_test

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

func quotaPath(resource int) tfjsonpath.Path {
	return tfjsonpath.New("resource_groups").AtSliceIndex(0).AtMapKey("flavors").AtSliceIndex(0).
		AtMapKey("resources").AtSliceIndex(resource).AtMapKey("nominal_quota")
}

// Quota follows the nodes: a node joining or leaving shows in the plan as a
// new nominal_quota, and the apply writes it.
func TestAccClusterQueueFromAllocatable(t *testing.T) {
	env := acctest.Env(t)
	live := kueueObject("clusterqueues", "", "derived")
	addr := "aiplatform_cluster_queue.derived"
	config := acctest.Provider(env) + `
resource "aiplatform_cluster_queue" "derived" {
  name = "derived"
  resource_groups = [{
    covered_resources = ["cpu", "memory", "nvidia.com/gpu"]
    flavors = [{
      name = "h100"
      resources = [
        { name = "cpu", from_allocatable = { node_selector = { testpool = "cq" }, reserve = "2" } },
        { name = "memory", nominal_quota = "64Gi" },
        { name = "nvidia.com/gpu", from_allocatable = { node_selector = { testpool = "cq" }, share = 0.5 } },
      ]
    }]
  }]
}
`
	gpuQuota := []string{"spec", "resourceGroups", "0", "flavors", "0", "resources", "2", "nominalQuota"}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					live.Equal(env, "8", gpuQuota...), // 0.5 × 16
					live.Equal(env, "62", "spec", "resourceGroups", "0", "flavors", "0", "resources", "0", "nominalQuota"), // 2 × 32 − 2
					resource.TestCheckResourceAttr(addr, "resource_groups.0.flavors.0.resources.2.nominal_quota", "8"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				PreConfig: func() {
					if _, err := env.AddNodes(context.Background(), testenv.NodePool{Name: "cq", Count: 1, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", Labels: map[string]string{"testpool": "cq"}}); err != nil {
						t.Fatal(err)
					}
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(addr, quotaPath(2), knownvalue.StringExact("12")),
						plancheck.ExpectKnownValue(addr, quotaPath(0), knownvalue.StringExact("94")),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: live.Equal(env, "12", gpuQuota...),
			},
			{
				PreConfig: func() {
					if err := env.DeleteNode(context.Background(), "cq-2"); err != nil {
						t.Fatal(err)
					}
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectKnownValue(addr, quotaPath(2), knownvalue.StringExact("8"))},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: live.Equal(env, "8", gpuQuota...),
			},
			{
				// from_allocatable lives in the configuration, not in the object.
				ResourceName: addr, ImportState: true, ImportStateId: "derived", ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"resource_groups.0.flavors.0.resources.0.from_allocatable", "resource_groups.0.flavors.0.resources.2.from_allocatable"},
			},
			{
				Config: acctest.Provider(env) + `
resource "aiplatform_cluster_queue" "derived" {
  name = "derived"
  resource_groups = [{
    covered_resources = ["nvidia.com/gpu"]
    flavors = [{ name = "h100", resources = [{ name = "nvidia.com/gpu", from_allocatable = { node_selector = { testpool = "cq" }, reserve = "17" } }] }]
  }]
}
`,
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("Reserve larger than allocatable", "reserve 17 is more than the 16 of nvidia.com/gpu allocatable on the 2 Ready nodes matching {testpool=cq}"),
			},
			{
				Config: acctest.Provider(env) + `
resource "aiplatform_cluster_queue" "derived" {
  name = "derived"
  resource_groups = [{
    covered_resources = ["nvidia.com/gpu"]
    flavors = [{ name = "h100", resources = [{ name = "nvidia.com/gpu", nominal_quota = "4", from_allocatable = { node_selector = { testpool = "cq" }, share = 1.5 } }] }]
  }]
}
`,
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("Both nominal_quota and from_allocatable"),
			},
			{Config: config, PlanOnly: true},
		},
		CheckDestroy: live.Gone(env),
	})
}

func TestAccCohort(t *testing.T) {
	env := acctest.Env(t)
	live := kueueObject("cohorts", "", "research")
	addr := "aiplatform_cohort.research"
	config := func(parent, weight string) string {
		return acctest.Provider(env) + `
resource "aiplatform_cohort" "research" {
  name         = "research"
  parent       = ` + parent + `
  fair_sharing = { weight = ` + weight + ` }
  resource_groups = [{
    covered_resources = ["nvidia.com/gpu"]
    flavors = [{ name = "h100", resources = [{ name = "nvidia.com/gpu", nominal_quota = "4", lending_limit = "2" }] }]
  }]
}
`
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: config(`"ai"`, `"2"`),
				Check: resource.ComposeAggregateTestCheckFunc(
					live.Equal(env, "ai", "spec", "parentName"),
					live.Equal(env, "2", "spec", "fairSharing", "weight"),
					live.Equal(env, "2", "spec", "resourceGroups", "0", "flavors", "0", "resources", "0", "lendingLimit"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config: config("null", `"3"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(live.Equal(env, nil, "spec", "parentName"), live.Equal(env, "3", "spec", "fairSharing", "weight")),
			},
			{ResourceName: addr, ImportState: true, ImportStateId: "research", ImportStateVerify: true},
			{Config: config(`"research"`, `"3"`), PlanOnly: true, ExpectError: acctest.ErrorMatching("Cohort is its own parent")},
			{
				PreConfig: func() { live.Delete(t, env) },
				Config:    config("null", `"3"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
		},
		CheckDestroy: live.Gone(env),
	})
}
