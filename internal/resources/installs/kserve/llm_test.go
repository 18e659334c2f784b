package kserve_test

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

var (
	llmisvcDeployment = acctest.NewObject("apps", "v1", "deployments", "kserve", "llmisvc-controller-manager")
	llmisvcCRD        = acctest.NewObject("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "llminferenceservices.serving.kserve.io")
	llmisvcSecret     = acctest.NewObject("", "v1", "secrets", "kserve", "llmisvc-webhook-server-cert")
	llmisvcValidating = acctest.NewObject("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "", "llminferenceserviceconfig.serving.kserve.io")
)

// aiplatform_kserve with llm_inference_service: the llmisvc CRD and
// controller releases installed beside KServe's, the real llmisvc
// controller Ready (its webhook certificate issued by the provider), an
// empty plan, drift of its webhook's CA put back; turning it off removes the
// controller, its CRDs (remove_crds) and the Secret, KServe staying.
func TestAccKServeLLM(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_kserve.this"
	on := acctest.Provider(env) + kserveBlock(t, "this", "  llm_inference_service = true")
	off := acctest.Provider(env) + kserveBlock(t, "this", "  llm_inference_service = false")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: on,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "llm_inference_service", "true"),
					resource.TestCheckResourceAttr(addr, "drift.#", "0"),
					kserveDeployment.Equal(env, 1, "status", "readyReplicas"),
					llmisvcDeployment.Equal(env, 1, "status", "readyReplicas"),
					llmisvcDeployment.Equal(env, "128Mi", "spec", "template", "spec", "containers", "0", "resources", "requests", "memory"),
					llmisvcCRD.Equal(env, "LLMInferenceService", "spec", "names", "kind"),
					llmisvcSecret.Equal(env, "terraform-provider-aiplatform", "metadata", "labels", "app.kubernetes.io/managed-by"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				PreConfig: func() {
					llmisvcValidating.Edit(t, env, "kubectl-edit", func(obj map[string]any) {
						hook := obj["webhooks"].([]any)[0].(map[string]any)
						hook["clientConfig"].(map[string]any)["caBundle"] = "bm90LWEtY2E=" // "not-a-ca"
					})
				},
				Config: on,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						acctest.DriftBefore{Addr: addr, Want: []string{"webhook llminferenceserviceconfig.serving.kserve.io/", "caBundle is not the CA of Secret kserve/llmisvc-webhook-server-cert"}},
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
			{
				ResourceName: addr, ImportState: true, ImportStateId: "kserve/kserve", ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"chart", "chart.%", "chart.path", "chart.name", "chart.repository", "timeout", "remove_crds", "values"},
			},
			{
				Config: off,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "llm_inference_service", "false"),
					llmisvcDeployment.Gone(env),
					llmisvcCRD.Gone(env),
					llmisvcSecret.Gone(env),
					kserveDeployment.Equal(env, 1, "status", "readyReplicas"),
				),
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(kserveDeployment.Gone(env), kserveCRD.Gone(env), llmisvcDeployment.Gone(env)),
	})
}
