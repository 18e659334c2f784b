package kueue_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

func TestAccTopology(t *testing.T) {
	env := acctest.Env(t)
	live := kueueObject("topologies", "", "dc")
	addr := "aiplatform_topology.dc"
	config := func(levels string) string {
		return acctest.Provider(env) + `
resource "aiplatform_topology" "dc" {
  name   = "dc"
  levels = [` + levels + `]
}
`
	}
	three := config(`"example.com/block", "example.com/rack", "kubernetes.io/hostname"`)
	two := config(`"example.com/block", "kubernetes.io/hostname"`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: three,
				Check: resource.ComposeAggregateTestCheckFunc(
					live.Equal(env, "example.com/block", "spec", "levels", "0", "nodeLabel"),
					live.Equal(env, "example.com/rack", "spec", "levels", "1", "nodeLabel"),
					live.Equal(env, "kubernetes.io/hostname", "spec", "levels", "2", "nodeLabel"),
					resource.TestCheckResourceAttr(addr, "levels.#", "3"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{ResourceName: addr, ImportState: true, ImportStateVerify: true, ImportStateId: "dc"},
			{
				// Kueue makes the levels immutable: the plan replaces the Topology.
				Config: two,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					live.Equal(env, "kubernetes.io/hostname", "spec", "levels", "1", "nodeLabel"),
					live.Check(env, func(obj map[string]any) error { return levelsLen(obj, 2) }),
				),
			},
			{
				// The only out-of-band edit Kueue allows is delete and create
				// again: with other levels the plan replaces it back.
				PreConfig: func() {
					live.Delete(t, env)
					createTopology(t, "dc", "example.com/zone")
				},
				Config: two,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: live.Equal(env, "example.com/block", "spec", "levels", "0", "nodeLabel"),
			},
			{
				PreConfig: func() { live.Delete(t, env) },
				Config:    two,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: live.Equal(env, "example.com/block", "spec", "levels", "0", "nodeLabel"),
			},
		},
		CheckDestroy: live.Gone(env),
	})
}

func levelsLen(obj map[string]any, want int) error {
	levels, _, _ := unstructured.NestedSlice(obj, "spec", "levels")
	if len(levels) != want {
		return fmt.Errorf("want %d levels, live has %v", want, levels)
	}
	return nil
}

// createTopology creates a Topology as kubectl would.
func createTopology(t *testing.T, name string, levels ...string) {
	t.Helper()
	env := acctest.Env(t)
	var ls []any
	for _, l := range levels {
		ls = append(ls, map[string]any{"nodeLabel": l})
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"levels": ls},
	}}
	if _, err := env.Dynamic.Resource(kueueObject("topologies", "", name).GVR).Create(context.Background(), obj, metav1.CreateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
}
