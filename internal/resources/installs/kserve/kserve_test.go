package kserve_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

var (
	kserveDeployment     = acctest.NewObject("apps", "v1", "deployments", "kserve", "kserve-controller-manager")
	kserveConfigMap      = acctest.NewObject("", "v1", "configmaps", "kserve", "inferenceservice-config")
	kserveCRD            = acctest.NewObject("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "inferenceservices.serving.kserve.io")
	inferenceServicesGVR = schema.GroupVersionResource{Group: "serving.kserve.io", Version: "v1beta1", Resource: "inferenceservices"}
	kserveValidating     = acctest.NewObject("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "", "inferenceservice.serving.kserve.io")
)

// kserveChart is charts/kserve-resources of github.com/kserve/kserve v0.20.0
// in the module cache (kserve-crd beside it).
func kserveChart(t *testing.T) string { return kserveChartAt(t, podrunner.KServeVersion) }

// kserveChartAt is KServe's resources chart of a version in the module cache.
func kserveChartAt(t *testing.T, version string) string {
	return acctest.ModuleChart(t, podrunner.KServeModule, catalog.KServe.ChartDir, version)
}

func kserveBlock(t *testing.T, name, extra string) string {
	return kserveBlockAt(t, name, podrunner.KServeVersion, "5m", extra)
}

// kserveBlockAt is an aiplatform_kserve of a version, from its chart in the
// module cache.
func kserveBlockAt(t *testing.T, name, version, timeout, extra string) string {
	return fmt.Sprintf(`
resource "aiplatform_kserve" %q {
  version             = %q
  chart               = { path = %q }
  timeout             = %q
  remove_crds         = true
  controller_requests = { cpu = "100m", memory = "128Mi" }
%s
}
`, name, version, kserveChartAt(t, version), timeout, extra)
}

// aiplatform_kserve: install (CRD release, resources release, the
// provider's webhook certificate with its CA in KServe's webhooks, the real
// manager Ready and its webhook denying a bad InferenceService), empty plan,
// drift of the deployment mode in KServe's ConfigMap and of a webhook's CA
// put back, Knative mode
// refused at plan in a cluster without Knative, import, destroy removing
// the controller and the CRDs.
func TestAccKServe(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_kserve.this"
	cfg := acctest.Provider(env) + kserveBlock(t, "this", "")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "kserve/kserve"),
					resource.TestCheckResourceAttr(addr, "status", "deployed"),
					resource.TestCheckResourceAttr(addr, "deployment_mode", "Standard"),
					resource.TestCheckResourceAttr(addr, "drift.#", "0"),
					kserveDeployment.Equal(env, 1, "status", "readyReplicas"),
					kserveDeployment.Equal(env, "128Mi", "spec", "template", "spec", "containers", "0", "resources", "requests", "memory"),
					kserveCRD.Equal(env, "InferenceService", "spec", "names", "kind"),
					kserveWebhookDenies(env),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				PreConfig: func() {
					// Someone flips KServe to Knative mode by hand.
					kserveConfigMap.Edit(t, env, "kubectl-edit", func(obj map[string]any) {
						obj["data"].(map[string]any)["deploy"] = `{"defaultDeploymentMode": "Knative"}`
					})
					kserveValidating.Edit(t, env, "kubectl-edit", func(obj map[string]any) {
						hook := obj["webhooks"].([]any)[0].(map[string]any)
						hook["clientConfig"].(map[string]any)["caBundle"] = "bm90LWEtY2E=" // "not-a-ca"
					})
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						acctest.DriftBefore{Addr: addr, Want: []string{
							"ConfigMap/kserve/inferenceservice-config: data.deploy",
							"webhook inferenceservice.serving.kserve.io/inferenceservice.kserve-webhook-server.validator: caBundle is not the CA",
						}},
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					kserveDeployModeStandard(env),
					kserveWebhookDenies(env),
				),
			},
			{
				Config:      acctest.Provider(env) + kserveBlock(t, "this", `  deployment_mode = "Knative"`),
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("Knative mode without Knative Serving", "deployment_mode = \"Standard\""),
			},
			{
				Config:      cfg + kserveBlock(t, "other", `  namespace = "kserve-two"`),
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("A second KServe", "kserve/kserve"),
			},
			{
				// Its own namespace changed: a replacement of the release,
				// planned without refusing it because of itself (the old
				// release is what it replaces).
				Config:             acctest.Provider(env) + kserveBlock(t, "this", `  namespace = "kserve-moved"`),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				ResourceName: addr, ImportState: true, ImportStateId: "kserve/kserve", ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"chart", "chart.%", "chart.path", "chart.name", "chart.repository", "timeout", "remove_crds", "values"},
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(kserveDeployment.Gone(env), kserveConfigMap.Gone(env), kserveCRD.Gone(env)),
	})
}

// kserveWebhookDenies: KServe's validating webhook, reached with the CA the
// provider injected, denies an InferenceService whose minReplicas exceeds
// maxReplicas.
func kserveWebhookDenies(env *testenv.Env) resource.TestCheckFunc {
	return func(*terraform.State) error {
		bad := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
			"metadata": map[string]any{"name": "bad", "namespace": "default"},
			"spec": map[string]any{"predictor": map[string]any{
				"minReplicas": int64(3), "maxReplicas": int64(1),
				"model": map[string]any{"modelFormat": map[string]any{"name": "huggingface"}, "storageUri": "pvc://models/tiny"},
			}},
		}}
		_, err := acctest.CreateThroughWebhooks(env, inferenceServicesGVR, bad)
		if err == nil {
			return fmt.Errorf("InferenceService with minReplicas 3 > maxReplicas 1 created, want a denial by KServe's webhook")
		}
		if !strings.Contains(err.Error(), "denied") || !strings.Contains(err.Error(), "cannot be greater than MaxReplicas") {
			return fmt.Errorf("InferenceService with minReplicas 3 > maxReplicas 1: %v, want a denial by KServe's webhook", err)
		}
		return nil
	}
}

// kserveDeployModeStandard: the inferenceservice-config ConfigMap's deploy
// entry names Standard as the default mode again.
func kserveDeployModeStandard(env *testenv.Env) resource.TestCheckFunc {
	return func(*terraform.State) error {
		obj, err := kserveConfigMap.Get(env)
		if err != nil {
			return err
		}
		deploy, _, _ := unstructured.NestedString(obj.Object, "data", "deploy")
		if !strings.Contains(deploy, `"defaultDeploymentMode": "Standard"`) {
			return fmt.Errorf("inferenceservice-config deploy: %s", deploy)
		}
		return nil
	}
}
