package kueue_test

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

func TestAccClusterQueue(t *testing.T) {
	env := acctest.Env(t)
	live := kueueObject("clusterqueues", "", "research")
	addr := "aiplatform_cluster_queue.research"
	create := acctest.Provider(env) + `
resource "aiplatform_cluster_queue" "research" {
  name = "research"
  resource_groups = [{
    covered_resources = ["cpu", "memory", "nvidia.com/gpu"]
    flavors = [{
      name = "h100"
      resources = [
        { name = "cpu", nominal_quota = "64" },
        { name = "memory", nominal_quota = "512Gi" },
        { name = "nvidia.com/gpu", nominal_quota = "8" },
      ]
    }]
  }]
}
`
	update := acctest.Provider(env) + `
resource "aiplatform_cluster_queue" "research" {
  name              = "research"
  cohort            = "ai"
  queueing_strategy = "StrictFIFO"
  namespace_selector = {
    match_labels      = { "team" = "research" }
    match_expressions = [{ key = "tier", operator = "In", values = ["gold", "silver"] }]
  }
  resource_groups = [{
    covered_resources = ["cpu", "memory", "nvidia.com/gpu"]
    flavors = [
      {
        name = "h100"
        resources = [
          { name = "cpu", nominal_quota = "64000m" },
          { name = "memory", nominal_quota = "512Gi" },
          { name = "nvidia.com/gpu", nominal_quota = "16", borrowing_limit = "8", lending_limit = "4" },
        ]
      },
      {
        name = "a100"
        resources = [
          { name = "cpu", nominal_quota = "32" },
          { name = "memory", nominal_quota = "256Gi" },
          { name = "nvidia.com/gpu", nominal_quota = "4" },
        ]
      },
    ]
  }]
}
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: create,
				Check: resource.ComposeAggregateTestCheckFunc(
					// Unset namespace_selector means every namespace: {} (Kueue's
					// own default, null, would match none).
					live.Equal(env, "map[]", "spec", "namespaceSelector"),
					live.Equal(env, "8", "spec", "resourceGroups", "0", "flavors", "0", "resources", "2", "nominalQuota"),
					live.Equal(env, "BestEffortFIFO", "spec", "queueingStrategy"),
					live.Equal(env, nil, "spec", "cohortName"),
					resource.TestCheckResourceAttr(addr, "stop_policy", "None"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config: update,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					live.Equal(env, "ai", "spec", "cohortName"),
					live.Equal(env, "StrictFIFO", "spec", "queueingStrategy"),
					live.Equal(env, "research", "spec", "namespaceSelector", "matchLabels", "team"),
					live.Equal(env, "[gold silver]", "spec", "namespaceSelector", "matchExpressions", "0", "values"),
					live.Equal(env, "a100", "spec", "resourceGroups", "0", "flavors", "1", "name"),
					live.Equal(env, "8", "spec", "resourceGroups", "0", "flavors", "0", "resources", "2", "borrowingLimit"),
					live.Equal(env, "4", "spec", "resourceGroups", "0", "flavors", "0", "resources", "2", "lendingLimit"),
					// "64000m" is kept as written: equal quantities never diff.
					resource.TestCheckResourceAttr(addr, "resource_groups.0.flavors.0.resources.0.nominal_quota", "64000m"),
				),
			},
			{ResourceName: addr, ImportState: true, ImportStateVerify: true, ImportStateId: "research"},
			{Config: update, PlanOnly: true},
			{
				// Someone edits the cohort with kubectl: the plan shows the
				// repair (exit code 2 under -detailed-exitcode, with a warning
				// naming the conflict) rather than failing ...
				PreConfig: func() {
					live.Edit(t, env, "someone-else", func(obj map[string]any) {
						obj["spec"].(map[string]any)["cohortName"] = "elsewhere"
					})
				},
				Config:             update,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				// ... and the apply, not forced, names the field manager that
				// now owns the field.
				Config:      update,
				ExpectError: regexp.MustCompile(`(?s)owned by\s+another\s+field\s+manager.*someone-else.*force_conflicts`),
			},
			{
				// force_conflicts takes the field back.
				Config: acctest.Provider(env, "force_conflicts = true") + update[len(acctest.Provider(env)):],
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: live.Equal(env, "ai", "spec", "cohortName"),
			},
			{
				PreConfig: func() { live.Delete(t, env) },
				Config:    create,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					live.Equal(env, nil, "spec", "cohortName"),
					live.Equal(env, "h100", "spec", "resourceGroups", "0", "flavors", "0", "name"),
				),
			},
		},
		CheckDestroy: live.Gone(env),
	})
}

func TestAccClusterQueueInvalid(t *testing.T) {
	env := acctest.Env(t)
	queue := func(body string) string {
		return `resource "aiplatform_cluster_queue" "bad" {
  name = "bad"
` + body + `
}`
	}
	groups := func(covered, resources string) string {
		return `  resource_groups = [{
    covered_resources = [` + covered + `]
    flavors = [{ name = "h100", resources = [` + resources + `] }]
  }]`
	}
	cases := map[string]struct {
		config string
		err    []string
	}{
		"bad quantity": {queue(groups(`"nvidia.com/gpu"`, `{ name = "nvidia.com/gpu", nominal_quota = "1x" }`)),
			[]string{`resource_groups[0].flavors[0].resources[0].nominal_quota: "1x" is not a non-negative Kubernetes quantity`}},
		"negative quantity": {queue(groups(`"nvidia.com/gpu"`, `{ name = "nvidia.com/gpu", nominal_quota = "-2" }`)),
			[]string{`resource_groups[0].flavors[0].resources[0].nominal_quota: "-2"`, "must not be negative"}},
		"resource outside covered_resources": {queue(groups(`"nvidia.com/gpu"`, `{ name = "cpu", nominal_quota = "1" }`)),
			[]string{"Resource not in covered_resources order", `resource_groups[0].flavors[0].resources[0].name: resource 0 is "cpu" but covered_resources[0] is "nvidia.com/gpu"`}},
		"resource missing from flavor": {queue(groups(`"cpu", "nvidia.com/gpu"`, `{ name = "cpu", nominal_quota = "1" }`)),
			[]string{"Resources do not match covered_resources", "resource_groups[0].flavors[0].resources: this flavor gives quota for 1 resources but the group covers 2 (cpu, nvidia.com/gpu)"}},
		"borrowing without cohort": {queue(groups(`"nvidia.com/gpu"`, `{ name = "nvidia.com/gpu", nominal_quota = "1", borrowing_limit = "1" }`)),
			[]string{"borrowing_limit without cohort", "resource_groups[0].flavors[0].resources[0].borrowing_limit: a queue can only borrow from a cohort"}},
		"lending above nominal": {queue(groups(`"nvidia.com/gpu"`, `{ name = "nvidia.com/gpu", nominal_quota = "1", lending_limit = "2" }`)),
			[]string{"lending_limit above nominal_quota", "resource_groups[0].flavors[0].resources[0].lending_limit: lending_limit 2 is more than nominal_quota 1"}},
		"duplicate covered resource": {queue(groups(`"cpu", "cpu"`, `{ name = "cpu", nominal_quota = "1" }, { name = "cpu", nominal_quota = "1" }`)),
			[]string{`resource_groups[0].covered_resources[1]: "cpu" is listed twice`}},
		"unknown queueing strategy": {queue(`queueing_strategy = "Fastest"` + "\n" + groups(`"cpu"`, `{ name = "cpu", nominal_quota = "1" }`)),
			[]string{"queueing_strategy", `value must be one of: ["BestEffortFIFO" "StrictFIFO"], got: "Fastest"`}},
		"In without values": {queue(`namespace_selector = { match_expressions = [{ key = "team", operator = "In" }] }` + "\n" + groups(`"cpu"`, `{ name = "cpu", nominal_quota = "1" }`)),
			[]string{`namespace_selector.match_expressions[0].values: operator "In" needs at least one value`}},
		"duplicate flavor": {queue(`  resource_groups = [
    { covered_resources = ["cpu"], flavors = [{ name = "f", resources = [{ name = "cpu", nominal_quota = "1" }] }] },
    { covered_resources = ["memory"], flavors = [{ name = "f", resources = [{ name = "memory", nominal_quota = "1" }] }] },
  ]`), []string{"Duplicate flavor", `resource_groups[1].flavors[0].name: flavor "f" appears more than once`}},
		"resource in two groups": {queue(`  resource_groups = [
    { covered_resources = ["cpu"], flavors = [{ name = "f", resources = [{ name = "cpu", nominal_quota = "1" }] }] },
    { covered_resources = ["cpu"], flavors = [{ name = "g", resources = [{ name = "cpu", nominal_quota = "1" }] }] },
  ]`), []string{`resource_groups[1].covered_resources[0]: "cpu" is already covered by resource_groups[0]`}},
		"no resource groups": {queue(`resource_groups = []`), []string{"resource_groups list must contain at least 1 elements"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: acctest.Factories,
				Steps: []resource.TestStep{{
					Config:      acctest.Provider(env) + c.config,
					PlanOnly:    true,
					ExpectError: acctest.ErrorMatching(c.err...),
				}},
			})
		})
	}
	if obj, err := kueueObject("clusterqueues", "", "bad").Get(env); err != nil || obj != nil {
		t.Fatalf("bad input changed the cluster: %v %v", obj, err)
	}
}
