package serving_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

// lwsAvailable checks, once, that the LWS controller reports want groups
// ready and the Available condition: right after an apply that waited, it
// must already hold.
func lwsAvailable(obj acctest.Object, want int64) func(map[string]any) error {
	return func(live map[string]any) error {
		status, _ := live["status"].(map[string]any)
		if fmt.Sprint(status["readyReplicas"]) != fmt.Sprint(want) {
			return fmt.Errorf("%s: status.readyReplicas %v, want %d", obj.Name, status["readyReplicas"], want)
		}
		conds, _ := status["conditions"].([]any)
		for _, c := range conds {
			if c, _ := c.(map[string]any); c["type"] == "Available" && c["status"] == "True" {
				return nil
			}
		}
		return fmt.Errorf("%s: no Available condition in %v", obj.Name, conds)
	}
}

// lwsNotAllReady checks that fewer than want groups are ready: the groups
// of the unschedulable configuration below never all are, so an apply that
// returned with this true did not wait for them.
func lwsNotAllReady(want int64) func(map[string]any) error {
	return func(live map[string]any) error {
		status, _ := live["status"].(map[string]any)
		if fmt.Sprint(status["readyReplicas"]) == fmt.Sprint(want) {
			return fmt.Errorf("status.readyReplicas %v: every group ready, the configuration was meant not to fit", status["readyReplicas"])
		}
		return nil
	}
}

// The apply waits until the LWS controller reports every group Ready; with
// wait_for_ready = false it returns at once; a timeout that expires fails
// the apply with what was missing (groups ready of wanted, the pods not
// scheduled and why), keeps the object in state, and a later apply that
// fits continues from there. Three groups of 2 pods × 8 GPUs need 48 GPUs;
// the pool has 16 (plan-time checks pass: each pod fits a node).
func TestAccLWSGroupWait(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_lws_group.g"
	live := lwsObject("default", "waits")
	serving := `kv_cache_bytes_per_request = 1073741824`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				// One group of 2 pods × 4 GPUs: Ready when the apply returns.
				Config: lwsConfig(env, "waits", 1, 2, 4, serving, ""),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "wait_for_ready", "true"),
					live.Check(env, lwsAvailable(live, 1)),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// Opt-out: 3 groups that cannot all be scheduled; the apply
				// returns with them pending.
				Config: lwsConfig(env, "waits", 3, 2, 8, serving, `wait_for_ready = false`),
				Check: resource.ComposeAggregateTestCheckFunc(
					live.Equal(env, 3, "spec", "replicas"),
					live.Check(env, lwsNotAllReady(3)),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// The same groups waited for, 2 s at most.
				Config: lwsConfig(env, "waits", 3, 2, 8, serving, `timeouts { update = "2s" }`),
				ExpectError: acctest.ErrorMatching("LeaderWorkerSet default/waits not ready",
					"did not report every group ready within 2s (timeouts); last seen:", "of 3 groups ready",
					"Pods not ready:", "Pending", "Insufficient nvidia.com/gpu", `timeouts { update = "…" }`, "wait_for_ready = false"),
			},
			{
				// What the failed update applied is in state: back to one
				// group is an update in place, waited for.
				Config: lwsConfig(env, "waits", 1, 2, 4, serving, `timeouts { update = "5m" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "replicas", "1"),
					resource.TestCheckResourceAttr(addr, "timeouts.update", "5m"),
					live.Check(env, lwsAvailable(live, 1)),
				),
			},
		},
		CheckDestroy: live.Gone(env),
	})
}

// A create that runs out of time records the LeaderWorkerSet (tainted), so
// nothing is left in the cluster that Terraform does not know: the next
// plan replaces it, and destroy removes it.
func TestAccLWSGroupCreateTimeout(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_lws_group.g"
	live := lwsObject("default", "late")
	serving := `kv_cache_bytes_per_request = 1073741824`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: lwsConfig(env, "late", 3, 2, 8, serving, `timeouts { create = "2s" }`),
				// (The pods may not exist yet 2 s after the create: the
				// message is asserted up to what is certain.)
				ExpectError: acctest.ErrorMatching("LeaderWorkerSet default/late not ready", "within 2s (timeouts)",
					`timeouts { create = "…" }`, "recorded in state (tainted)"),
			},
			{
				Config: lwsConfig(env, "late", 3, 2, 8, serving, `wait_for_ready = false`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionReplace)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "default/late"),
					live.Equal(env, 3, "spec", "replicas"),
				),
			},
		},
		CheckDestroy: live.Gone(env),
	})
}
