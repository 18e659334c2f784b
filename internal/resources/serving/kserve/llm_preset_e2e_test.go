package kserve_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

var llmisvcGVR = schema.GroupVersionResource{Group: "serving.kserve.io", Version: "v1alpha2", Resource: "llminferenceservices"}

// A preset for Llama 3 8B on two H100s (tensor parallelism 2, no router)
// and an LLMInferenceService that names only it in spec.baseRefs: the real
// llmisvc controller merges its well-known single-node template
// (kserve-config-llm-template, from KServe's kserve-runtime-configs chart,
// which the controller requires in its own namespace: without it the
// service fails with "LLMInferenceServiceConfig not found") with the
// preset into the Deployment <name>-kserve, whose main container carries the
// preset's image, GPUs, startup probe and pool, and names the preset as a
// user-referenced applied config in its status.
func TestAccLLMServicePresetLLMInferenceService(t *testing.T) {
	env := acctest.Env(t)
	runtimeConfigs(t, env)
	cfg := acctest.Provider(env) + fmt.Sprintf(`
resource "aiplatform_llm_service_preset" "llama" {
  name      = "llama-8b-h100"
  namespace = "default"
  model = {
    uri  = "hf://meta-llama/Llama-3.1-8B-Instruct"
    name = "llama-3.1-8b"
  }
  sizing = {
    params_billion           = 8
    dtype                    = "bf16"
    context_length           = 8192
    kv_cache_bytes_per_token = 131072
    attention_heads          = 32
    kv_heads                 = 8
  }
  parallelism = { tensor = 2 }
  replicas    = 1
  template = {
    containers = [{
      name     = "main"
      image    = "vllm/vllm-openai:v0.9.0"
      requests = { cpu = "4", memory = "32Gi" }
      limits   = { cpu = "8", memory = "48Gi" }
    }]
    node_selector = { %s = "h100" }
    tolerations   = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  }
}
`, poolLabel)
	addr := "aiplatform_llm_service_preset.llama"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{{
			Config: cfg,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(addr, "gpus_per_pod", "2"),
				llmServiceRuns(t, env),
			),
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
		}, {
			// The controller's finalizer keeps a preset that a service
			// names (condition ConfigInUse): the service goes first, then
			// the destroy can delete the preset. Its going is no drift.
			PreConfig: func() { deleteService(t, env) },
			Config:    cfg,
			PlanOnly:  true,
		}},
	})
}

// deleteService deletes the LLMInferenceService and waits until it is gone
// (the wait is for the controller's finalizer, not a bound on its speed).
func deleteService(t *testing.T, env *testenv.Env) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res := env.Dynamic.Resource(llmisvcGVR).Namespace("default")
	if err := res.Delete(ctx, "llama", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	for {
		if _, err := res.Get(ctx, "llama", metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		} else if err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatal("LLMInferenceService llama not gone")
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// runtimeConfigs installs KServe's published LLMInferenceServiceConfigs
// (chart kserve-runtime-configs from the module cache, llmisvcConfigs
// only) into the kserve namespace, as release kserve-runtime-configs.
func runtimeConfigs(t *testing.T, env *testenv.Env) {
	t.Helper()
	ctx := context.Background()
	dir, err := testenv.ModuleDir(ctx, "github.com/kserve/kserve", "v0.20.0")
	if err != nil {
		t.Fatal(err)
	}
	ch, err := helm.LoadChart(helm.Source{Path: filepath.Join(dir, "charts", "kserve-runtime-configs"), Version: "v0.20.0"})
	if err != nil {
		t.Fatal(err)
	}
	rel := &helm.Release{Client: kube.NewClientFromREST(env.RESTConfig, false), Namespace: "kserve", Name: "kserve-runtime-configs"}
	values := map[string]any{"kserve": map[string]any{"llmisvcConfigs": map[string]any{"enabled": true}}}
	if _, err := rel.Install(ctx, helm.Options{Chart: ch, Values: values, Timeout: 2 * time.Minute}); err != nil {
		t.Fatalf("installing KServe's LLMInferenceServiceConfigs: %v", err)
	}
	// No uninstall: the llmisvc controller's webhook refuses to delete its
	// well-known configs from its own namespace (PREVENT_WELL_KNOWN_CONFIG_
	// DELETION, default true), so the release stays until the package's
	// cluster stops.
}

// llmServiceRuns creates the LLMInferenceService naming the preset and
// checks what the llmisvc controller makes of it.
func llmServiceRuns(t *testing.T, env *testenv.Env) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		svc := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceService",
			"metadata": map[string]any{"name": "llama", "namespace": "default"},
			"spec":     map[string]any{"baseRefs": []any{map[string]any{"name": "llama-8b-h100"}}},
		}}
		if _, err := env.Dynamic.Resource(llmisvcGVR).Namespace("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating the LLMInferenceService: %w", err)
		}
		t.Cleanup(func() {
			err := env.Dynamic.Resource(llmisvcGVR).Namespace("default").Delete(context.Background(), "llama", metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		})
		// The controller reconciles the service into a Deployment; the wait
		// is for that, not a bound on how fast it happens.
		dep, err := acctest.AwaitDeployment(env, "default", "llama-kserve", acctest.Object{GVR: llmisvcGVR, Namespace: "default", Name: "llama"}, 5*time.Minute)
		if err != nil {
			return err
		}
		if err := workloadHas(dep); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		return appliedPreset(ctx, env)
	}
}

// workloadHas: the Deployment's main container is the preset's.
func workloadHas(dep *appsv1.Deployment) error {
	spec := dep.Spec.Template.Spec
	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == "main" })
	if i < 0 {
		return fmt.Errorf("Deployment llama-kserve has no container main: %v", spec.Containers)
	}
	c := spec.Containers[i]
	var problems []string
	if c.Image != "vllm/vllm-openai:v0.9.0" {
		problems = append(problems, "image "+c.Image)
	}
	if g := c.Resources.Limits["nvidia.com/gpu"]; g.String() != "2" {
		problems = append(problems, "nvidia.com/gpu limit "+g.String())
	}
	if m := c.Resources.Requests["memory"]; m.String() != "32Gi" {
		problems = append(problems, "memory request "+m.String())
	}
	if c.StartupProbe == nil || c.StartupProbe.FailureThreshold < 2 {
		problems = append(problems, fmt.Sprintf("startup probe %v", c.StartupProbe))
	}
	if spec.NodeSelector[poolLabel] != "h100" {
		problems = append(problems, fmt.Sprintf("node selector %v", spec.NodeSelector))
	}
	if len(problems) > 0 {
		return fmt.Errorf("Deployment llama-kserve is not the preset's: %v", problems)
	}
	return nil
}

// appliedPreset: the service's status names the preset as a config the user
// referenced (status.appliedConfigs, source UserRef).
func appliedPreset(ctx context.Context, env *testenv.Env) error {
	for {
		obj, err := env.Dynamic.Resource(llmisvcGVR).Namespace("default").Get(ctx, "llama", metav1.GetOptions{})
		if err != nil {
			return err
		}
		applied, _, _ := unstructured.NestedSlice(obj.Object, "status", "appliedConfigs")
		for _, a := range applied {
			m, _ := a.(map[string]any)
			if m["name"] == "llama-8b-h100" && m["namespace"] == "default" && m["source"] == "UserRef" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the LLMInferenceService's status.appliedConfigs %v does not name the preset", applied)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
