package kueue_test

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

// An AdmissionCheck for cluster-autoscaler provisioning and the
// ProvisioningRequestConfig it names, as a platform team declares them.
func TestAccAdmissionCheckAndProvisioningRequestConfig(t *testing.T) {
	env := acctest.Env(t)
	check := kueueObject("admissionchecks", "", "provision")
	prc := kueueObject("provisioningrequestconfigs", "", "gpu-capacity")
	checkAddr, prcAddr := "aiplatform_admission_check.provision", "aiplatform_provisioning_request_config.gpu"
	create := `
resource "aiplatform_provisioning_request_config" "gpu" {
  name                    = "gpu-capacity"
  provisioning_class_name = "check-capacity.autoscaling.x-k8s.io"
  managed_resources       = ["nvidia.com/gpu"]
  retry_strategy          = { backoff_limit_count = 1 }
}

resource "aiplatform_admission_check" "provision" {
  name            = "provision"
  controller_name = "kueue.x-k8s.io/provisioning-request"
  parameters = {
    api_group = "kueue.x-k8s.io"
    kind      = "ProvisioningRequestConfig"
    name      = aiplatform_provisioning_request_config.gpu.name
  }
}
`
	update := `
resource "aiplatform_provisioning_request_config" "gpu" {
  name                    = "gpu-capacity"
  provisioning_class_name = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
  parameters              = { ValidUntilSeconds = "600" }
  managed_resources       = ["nvidia.com/gpu", "cpu"]
  retry_strategy          = { backoff_limit_count = 5, backoff_base_seconds = 30, backoff_max_seconds = 600 }
  pod_set_updates = {
    node_selector = [{ key = "autoscaling.x-k8s.io/provisioning-request", value_from_provisioning_class_detail = "ProvisioningRequestName" }]
  }
  pod_set_merge_policy = "IdenticalWorkloadSchedulingRequirements"
}

resource "aiplatform_admission_check" "provision" {
  name            = "provision"
  controller_name = "kueue.x-k8s.io/provisioning-request"
  parameters = {
    api_group = "kueue.x-k8s.io"
    kind      = "ProvisioningRequestConfig"
    name      = aiplatform_provisioning_request_config.gpu.name
  }
}
`
	renamed := `
resource "aiplatform_admission_check" "provision" {
  name            = "provision"
  controller_name = "example.com/budget"
}
`
	p := acctest.Provider(env)
	forced := acctest.Provider(env, "force_conflicts = true")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: p + create,
				Check: resource.ComposeAggregateTestCheckFunc(
					check.Equal(env, "kueue.x-k8s.io/provisioning-request", "spec", "controllerName"),
					check.Equal(env, "gpu-capacity", "spec", "parameters", "name"),
					check.Equal(env, "ProvisioningRequestConfig", "spec", "parameters", "kind"),
					prc.Equal(env, "check-capacity.autoscaling.x-k8s.io", "spec", "provisioningClassName"),
					prc.Equal(env, "[nvidia.com/gpu]", "spec", "managedResources"),
					prc.Equal(env, int64(1), "spec", "retryStrategy", "backoffLimitCount"),
					// The rest of the strategy is the CRD's default, and the
					// schema's, so it never diffs.
					prc.Equal(env, int64(60), "spec", "retryStrategy", "backoffBaseSeconds"),
					resource.TestCheckResourceAttr(prcAddr, "retry_strategy.backoff_max_seconds", "1800"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config: p + update,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(prcAddr, plancheck.ResourceActionUpdate),
						plancheck.ExpectResourceAction(checkAddr, plancheck.ResourceActionNoop),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					prc.Equal(env, "best-effort-atomic-scale-up.autoscaling.x-k8s.io", "spec", "provisioningClassName"),
					prc.Equal(env, "600", "spec", "parameters", "ValidUntilSeconds"),
					prc.Equal(env, int64(600), "spec", "retryStrategy", "backoffMaxSeconds"),
					prc.Equal(env, "ProvisioningRequestName", "spec", "podSetUpdates", "nodeSelector", "0", "valueFromProvisioningClassDetail"),
					prc.Equal(env, "IdenticalWorkloadSchedulingRequirements", "spec", "podSetMergePolicy"),
				),
			},
			{ResourceName: checkAddr, ImportState: true, ImportStateVerify: true, ImportStateId: "provision"},
			{ResourceName: prcAddr, ImportState: true, ImportStateVerify: true, ImportStateId: "gpu-capacity"},
			{
				// Edited by hand: the plan shows both, force_conflicts takes
				// the fields back.
				PreConfig: func() {
					check.Edit(t, env, "someone-else", func(obj map[string]any) {
						obj["spec"].(map[string]any)["parameters"].(map[string]any)["name"] = "elsewhere"
					})
					prc.Edit(t, env, "someone-else", func(obj map[string]any) {
						obj["spec"].(map[string]any)["retryStrategy"].(map[string]any)["backoffLimitCount"] = int64(0)
					})
				},
				Config: forced + update,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(checkAddr, plancheck.ResourceActionUpdate),
						plancheck.ExpectResourceAction(prcAddr, plancheck.ResourceActionUpdate),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					check.Equal(env, "gpu-capacity", "spec", "parameters", "name"),
					prc.Equal(env, int64(5), "spec", "retryStrategy", "backoffLimitCount"),
				),
			},
			{
				PreConfig: func() { check.Delete(t, env); prc.Delete(t, env) },
				Config:    p + update,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(checkAddr, plancheck.ResourceActionCreate),
						plancheck.ExpectResourceAction(prcAddr, plancheck.ResourceActionCreate),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					check.Equal(env, "gpu-capacity", "spec", "parameters", "name"),
					prc.Equal(env, int64(5), "spec", "retryStrategy", "backoffLimitCount"),
				),
			},
			{
				// controller_name is immutable in Kueue: replaced; parameters
				// removed from the object.
				Config: p + renamed,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(checkAddr, plancheck.ResourceActionDestroyBeforeCreate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					check.Equal(env, "example.com/budget", "spec", "controllerName"),
					check.Equal(env, nil, "spec", "parameters"),
					prc.Gone(env),
				),
			},
		},
		CheckDestroy: resource.ComposeTestCheckFunc(check.Gone(env), prc.Gone(env)),
	})
}
