package kueue_test

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

func TestAccResourceFlavor(t *testing.T) {
	env := acctest.Env(t)
	live := kueueObject("resourceflavors", "", "h100")
	create := acctest.Provider(env) + `
resource "aiplatform_resource_flavor" "h100" {
  name        = "h100"
  node_labels = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
  node_taints = [{ key = "nvidia.com/gpu", value = "present", effect = "NoSchedule" }]
  tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
}
`
	update := acctest.Provider(env) + `
resource "aiplatform_resource_flavor" "h100" {
  name        = "h100"
  node_labels = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3", "pool" = "training" }
  tolerations = [
    { key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" },
    { key = "maintenance", operator = "Equal", value = "soon", effect = "NoExecute", toleration_seconds = 300 },
  ]
}
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: create,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("aiplatform_resource_flavor.h100", "id", "h100"),
					live.Equal(env, "NVIDIA-H100-80GB-HBM3", "spec", "nodeLabels", "nvidia.com/gpu.product"),
					live.Equal(env, "[map[effect:NoSchedule key:nvidia.com/gpu value:present]]", "spec", "nodeTaints"),
					live.Equal(env, "[map[effect:NoSchedule key:nvidia.com/gpu operator:Exists]]", "spec", "tolerations"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// Removing node_taints removes them from the live object (this
				// manager owned them), and the update is in place.
				Config: update,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction("aiplatform_resource_flavor.h100", plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					live.Equal(env, "training", "spec", "nodeLabels", "pool"),
					live.Equal(env, nil, "spec", "nodeTaints"),
					live.Equal(env, int64(300), "spec", "tolerations", "1", "tolerationSeconds"),
				),
			},
			{ResourceName: "aiplatform_resource_flavor.h100", ImportState: true, ImportStateVerify: true, ImportStateId: "h100"},
			{Config: update, PlanOnly: true},
			{
				PreConfig: func() { live.Delete(t, env) },
				Config:    update,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction("aiplatform_resource_flavor.h100", plancheck.ResourceActionCreate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: live.Equal(env, "training", "spec", "nodeLabels", "pool"),
			},
		},
		CheckDestroy: resource.ComposeTestCheckFunc(live.Gone(env)),
	})
}

func TestAccResourceFlavorInvalid(t *testing.T) {
	env := acctest.Env(t)
	cases := map[string]struct {
		config string
		err    []string
	}{
		"name not DNS-1123": {`resource "aiplatform_resource_flavor" "x" { name = "H100_Pool" }`, []string{`name: "H100_Pool" is not a valid DNS-1123 subdomain`}},
		"bad taint effect": {`resource "aiplatform_resource_flavor" "x" {
  name        = "x"
  node_taints = [{ key = "a", effect = "Sometimes" }]
}`, []string{"node_taints[0].effect", `value must be one of: ["NoSchedule"`, `got: "Sometimes"`}},
		"toleration without key needs Exists": {`resource "aiplatform_resource_flavor" "x" {
  name        = "x"
  tolerations = [{ operator = "Equal", value = "v" }]
}`, []string{`tolerations[0].operator: A toleration without key matches every taint and needs operator = "Exists"`}},
		"toleration_seconds needs NoExecute": {`resource "aiplatform_resource_flavor" "x" {
  name        = "x"
  tolerations = [{ key = "k", operator = "Exists", effect = "NoSchedule", toleration_seconds = 5 }]
}`, []string{`tolerations[0].toleration_seconds: toleration_seconds only applies to effect = "NoExecute"`}},
		"bad label key": {`resource "aiplatform_resource_flavor" "x" {
  name        = "x"
  node_labels = { "not a key" = "v" }
}`, []string{"Invalid label key", `node_labels: "not a key": name part must consist of alphanumeric characters`}},
		"topology without labels": {`resource "aiplatform_resource_flavor" "x" {
  name          = "x"
  topology_name = "default"
}`, []string{"node_labels required with topology_name"}},
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
	// Nothing reached the cluster.
	if obj, err := kueueObject("resourceflavors", "", "x").Get(env); err != nil || obj != nil {
		t.Fatalf("bad input changed the cluster: %v %v", obj, err)
	}
}
