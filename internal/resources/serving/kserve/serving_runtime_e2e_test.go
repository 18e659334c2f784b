package kserve_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

var isvcGVR = schema.GroupVersionResource{Group: "serving.kserve.io", Version: "v1beta1", Resource: "inferenceservices"}

// A namespaced vLLM runtime for Llama 3 8B (the serving package's numbers:
// a startup probe of 15 checks for 16 GB from a node-local cache at 1 GiB/s)
// and an InferenceService that names it: KServe's controller merges the
// runtime into the predictor's Deployment, whose pod carries the runtime's
// image, args (KServe's {{.Name}} filled in), GPUs, cache mount, probes and
// pool; KServe's runtime webhook accepted the runtime.
func TestAccServingRuntimeInferenceService(t *testing.T) {
	env := acctest.Env(t)
	cfg := acctest.Provider(env) + fmt.Sprintf(`
resource "aiplatform_serving_runtime" "vllm" {
  name      = "vllm-llama-8b"
  namespace = "default"
  supported_model_formats = [{ name = "vLLM", version = "1", auto_select = true, priority = 2 }]
  protocol_versions       = ["v2", "v1"]
  template = {
    containers = [{
      name     = "kserve-container"
      image    = "vllm/vllm-openai:v0.9.0"
      args     = ["--model", "/mnt/model-cache", "--port", "8080", "--served-model-name", "{{.Name}}", "--max-model-len", "32768"]
      env      = [{ name = "HF_TOKEN", value_from = { secret_key_ref = { name = "hf-token", key = "token", optional = true } } }]
      requests = { cpu = "4", memory = "32Gi" }
      limits   = { cpu = "8", memory = "48Gi" }
    }]
    node_selector = { %s = "h100" }
    tolerations   = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  }
  model = {
    params_billion           = 8
    dtype                    = "bf16"
    context_length           = 32768
    kv_cache_bytes_per_token = 131072
    attention_heads          = 32
    kv_heads                 = 8
  }
  gpus_per_replica = 1
  model_cache = {
    mode       = "node_local"
    host_path  = "/var/lib/model-cache/default/llama-8b"
    sub_path   = "main-0123abcd"
    mount_path = "/mnt/model-cache"
  }
}
`, poolLabel)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{{
			Config: cfg,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr("aiplatform_serving_runtime.vllm", "startup_failure_threshold", "15"),
				inferenceServiceRuns(t, env),
			),
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
		}},
	})
}

// inferenceServiceRuns creates the InferenceService and checks the
// Deployment KServe makes of it.
func inferenceServiceRuns(t *testing.T, env *testenv.Env) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		isvc := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
			"metadata": map[string]any{"name": "llama", "namespace": "default",
				"annotations": map[string]any{"serving.kserve.io/deploymentMode": "Standard"}},
			"spec": map[string]any{"predictor": map[string]any{"model": map[string]any{
				"modelFormat": map[string]any{"name": "vLLM", "version": "1"},
				"runtime":     "vllm-llama-8b",
			}}},
		}}
		if _, err := env.Dynamic.Resource(isvcGVR).Namespace("default").Create(ctx, isvc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating the InferenceService: %w", err)
		}
		t.Cleanup(func() {
			err := env.Dynamic.Resource(isvcGVR).Namespace("default").Delete(context.Background(), "llama", metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		})
		// KServe reconciles the InferenceService into a Deployment; the
		// wait is for that, not a bound on how fast it happens.
		dep, err := acctest.AwaitDeployment(env, "default", "llama-predictor", acctest.Object{GVR: isvcGVR, Namespace: "default", Name: "llama"}, 5*time.Minute)
		if err != nil {
			return err
		}
		return predictorHas(dep.Spec.Template.Spec.NodeSelector[poolLabel], dep.Spec.Template.Spec.Containers, dep.Spec.Template.Spec.Volumes, dep.Spec.Template.Spec.Tolerations)
	}
}
