package serving_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

func presetObject(namespace, name string) acctest.Object {
	return acctest.Object{GVR: schema.GroupVersionResource{Group: "serving.kserve.io", Version: "v1alpha2", Resource: "llminferenceserviceconfigs"},
		Namespace: namespace, Name: name}
}

// presetConfig is a preset for Llama 3.1 70B in bf16 (140 GB; 64 heads, 8
// KV heads, 327,680 bytes of KV per token) on the H100 pool: tensor 4, two
// data-parallel ranks per pod (8 GPUs), built on KServe's vLLM template,
// with a KServe-managed route, gateway and endpoint picker.
func presetConfig(env *testenv.Env, name string, edits ...string) string {
	cfg := fmt.Sprintf(`
resource "aiplatform_llm_service_preset" "p" {
  name      = %q
  namespace = "default"
  model = {
    uri         = "hf://meta-llama/Llama-3.1-70B-Instruct"
    name        = "llama-70b"
  }
  sizing = {
    params_billion           = 70
    dtype                    = "bf16"
    context_length           = 8192
    kv_cache_bytes_per_token = 327680
    attention_heads          = 64
    kv_heads                 = 8
  }
  parallelism = { tensor = 4, data = 4, data_local = 2 }
  replicas    = 2
  template = {
    containers = [{
      name     = "main"
      image    = "ghcr.io/llm-d/llm-d-cuda:v0.8.0"
      env      = [{ name = "HF_TOKEN", value_from = { secret_key_ref = { name = "hf-token", key = "token" } } }]
      requests = { cpu = "16", memory = "256Gi" }
      limits   = { cpu = "32", memory = "512Gi" }
    }]
    node_selector = { %s = "h100" }
    tolerations   = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  }
  model_cache = {
    claim_name = "llama-70b-cache"
    sub_path   = "main-0123abcd"
    mount_path = "/mnt/models"
  }
  router = {
    route              = true
    gateway            = true
    scheduler          = true
    scheduler_replicas = 2
  }
  #extra
}
`, name, lwsPoolLabel)
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(cfg, edits[i]) {
			panic("presetConfig: no " + edits[i])
		}
		cfg = strings.Replace(cfg, edits[i], edits[i+1], 1)
	}
	return acctest.Provider(env) + cfg
}

// Apply, empty plan, edited by hand (drift planned, repaired), deleted by
// hand and re-created, import. The numbers:
// 140 GB over 4 GPUs is 35 GB each, one request of 8,192 tokens × 327,680 B
// is 2.68 GB (0.67 GB each); an H100 holds 76.97 GB after the 0.1 reserve,
// so ⌊(76,968,728,985 − 35e9 − 2^30) × 4 ÷ 2,684,354,560⌋ = 60 requests.
// Loading 140 GB from a claim at 200 MiB/s takes 668 s: the startup probe
// allows ⌈(667.6 + 60) × 2 ÷ 10⌉ = 146 failures of 10 s.
func TestAccLLMServicePreset(t *testing.T) {
	env := acctest.Env(t)
	kserveCRDs(t, env)
	addr := "aiplatform_llm_service_preset.p"
	p := presetObject("default", "llama-70b-h100")
	cfg := presetConfig(env, "llama-70b-h100")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "default/llama-70b-h100"),
					resource.TestCheckResourceAttr(addr, "gpus_per_pod", "8"),
					resource.TestCheckResourceAttr(addr, "gpu_memory", "81559Mi"),
					resource.TestCheckResourceAttr(addr, "max_concurrency_per_replica", "60"),
					resource.TestCheckResourceAttr(addr, "estimated_load_seconds", "668"),
					resource.TestCheckResourceAttr(addr, "startup_failure_threshold", "146"),
					p.Equal(env, "hf://meta-llama/Llama-3.1-70B-Instruct", "spec", "model", "uri"),
					p.Equal(env, int64(4), "spec", "parallelism", "tensor"),
					p.Equal(env, int64(2), "spec", "parallelism", "dataLocal"),
					p.Equal(env, nil, "spec", "baseRefs"),
					p.Equal(env, int64(2), "spec", "router", "scheduler", "replicas"),
					p.Equal(env, map[string]any{}, "spec", "router", "route"),
					p.Equal(env, map[string]any{}, "spec", "router", "gateway"),
					p.Equal(env, "8", "spec", "template", "containers", "0", "resources", "limits", "nvidia.com/gpu"),
					p.Equal(env, "8", "spec", "template", "containers", "0", "resources", "requests", "nvidia.com/gpu"),
					p.Equal(env, int64(146), "spec", "template", "containers", "0", "startupProbe", "failureThreshold"),
					p.Equal(env, "/health", "spec", "template", "containers", "0", "livenessProbe", "httpGet", "path"),
					p.Equal(env, int64(8000), "spec", "template", "containers", "0", "livenessProbe", "httpGet", "port"),
					p.Equal(env, "/v1/models", "spec", "template", "containers", "0", "readinessProbe", "httpGet", "path"),
					p.Equal(env, true, "spec", "template", "containers", "0", "volumeMounts", "0", "readOnly"),
					p.Equal(env, "llama-70b-cache", "spec", "template", "volumes", "0", "persistentVolumeClaim", "claimName"),
					p.Equal(env, "h100", "spec", "template", "nodeSelector", lwsPoolLabel),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// Someone halves the tensor parallelism and drops the
				// startup probe: the plan shows the repair, with a warning
				// naming each field it would take back from that manager ...
				PreConfig: func() {
					p.Edit(t, env, "kubectl-edit", func(o map[string]any) {
						object(o, "spec", "parallelism").(map[string]any)["tensor"] = int64(2)
						c := object(o, "spec", "template").(map[string]any)["containers"].([]any)[0].(map[string]any)
						delete(c, "startupProbe")
					})
				},
				Config:             cfg,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				// ... and the apply, not forced, is refused naming them.
				Config:      cfg,
				ExpectError: acctest.ErrorMatching(`conflict with "kubectl-edit"`, `tensor: 2 → 4`),
			},
			{
				// With force_conflicts the repair is planned and applied.
				Config: strings.Replace(cfg, "provider \"aiplatform\" {\n", "provider \"aiplatform\" {\n  force_conflicts = true\n", 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					p.Equal(env, int64(4), "spec", "parallelism", "tensor"),
					p.Equal(env, int64(146), "spec", "template", "containers", "0", "startupProbe", "failureThreshold"),
				),
			},
			{
				// Deleted out of band: the plan creates it again.
				PreConfig: func() { p.Delete(t, env) },
				Config:    cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: p.Equal(env, int64(4), "spec", "parallelism", "tensor"),
			},
			{ResourceName: addr, ImportState: true, ImportStateVerify: true, ImportStateId: "default/llama-70b-h100"},
			{
				// A router-only preset, as KServe's own kserve-config-llm-router-route.
				Config: acctest.Provider(env) + `
resource "aiplatform_llm_service_preset" "p" {
  name      = "llama-70b-h100"
  namespace = "default"
  router    = { route_refs = ["team-route"], gateway_refs = [{ name = "inference", namespace = "gateways" }] }
}
`,
				Check: resource.ComposeAggregateTestCheckFunc(
					p.Equal(env, "team-route", "spec", "router", "route", "http", "refs", "0", "name"),
					p.Equal(env, "gateways", "spec", "router", "gateway", "refs", "0", "namespace"),
					p.Check(env, func(o map[string]any) error {
						if spec := o["spec"].(map[string]any); spec["template"] != nil || spec["parallelism"] != nil {
							return fmt.Errorf("the template and parallelism were left behind: %v", spec)
						}
						return nil
					}),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
		CheckDestroy: p.Gone(env),
	})
}

// Bad presets are refused at plan time with the attribute path and the
// numbers, and nothing is created.
func TestAccLLMServicePresetValidation(t *testing.T) {
	env := acctest.Env(t)
	kserveCRDs(t, env)
	plan := func(want *regexp.Regexp, edits ...string) resource.TestStep {
		return resource.TestStep{Config: presetConfig(env, "bad", edits...), PlanOnly: true, ExpectError: want}
	}
	const par = "parallelism = { tensor = 4, data = 4, data_local = 2 }"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			// 140 GB over one GPU.
			plan(acctest.ErrorMatching("parallelism.tensor", "one model copy over tensor 1 × pipeline 1 = 1 GPUs cannot hold one request of 8192 tokens",
				"weights 140 GB ÷ tensor_parallel 1 = 140 GB"), par, "parallelism = { tensor = 1 }"),
			// Tensor 3 does not divide 64 heads.
			plan(acctest.ErrorMatching("parallelism.tensor", "tensor_parallel 3 does not divide the model's 64 attention heads"), par, "parallelism = { tensor = 3 }"),
			// 4 × 4 = 16 GPUs in a pod on 8-GPU nodes.
			plan(acctest.ErrorMatching("parallelism.tensor", "each replica asks for 16 GPUs, but the 2 nodes matching {lwspool=h100} have at most 8 allocatable"),
				par, "parallelism = { tensor = 4, data = 8, data_local = 4 }"),
			plan(acctest.ErrorMatching("parallelism.data_local", "data 3 is spread over pods of data_local 2 ranks each"), par, "parallelism = { tensor = 4, data = 3, data_local = 2 }"),
			plan(acctest.ErrorMatching("router.route_refs", "Choose one"), "route              = true", `route = true
    route_refs = ["mine"]`),
			plan(acctest.ErrorMatching("router.scheduler_replicas", "set scheduler = true"), "scheduler          = true", "scheduler = false"),
			// A cache needs the vLLM pod to mount it in.
			{Config: acctest.Provider(env) + `
resource "aiplatform_llm_service_preset" "p" {
  name        = "bad"
  namespace   = "default"
  model_cache = { claim_name = "llama-70b-cache", sub_path = "main", mount_path = "/mnt/models" }
}
`, PlanOnly: true, ExpectError: acctest.ErrorMatching("model_cache", "sets the vLLM container of template, which this preset does not have")},
			plan(regexp.MustCompile(`(?s)model.uri.*must be a URI with a scheme`), `"hf://meta-llama/Llama-3.1-70B-Instruct"`, `"meta-llama/Llama-3.1-70B-Instruct"`),
			plan(acctest.ErrorMatching("liveness_path", `"/readyz" is a readiness or dependency check`), "#extra", `liveness_path = "/readyz"`),
			plan(acctest.ErrorMatching("template.containers[0].limits", "nvidia.com/gpu of the managed container"),
				`limits   = { cpu = "32", memory = "512Gi" }`, `limits   = { cpu = "32", memory = "512Gi", "nvidia.com/gpu" = "8" }`),
			plan(acctest.ErrorMatching("sizing.dtype", "params_billion needs dtype"), `dtype                    = "bf16"`, ""),
		},
	})
	if obj, err := presetObject("default", "bad").Get(env); err != nil || obj != nil {
		t.Errorf("a refused plan left the preset in the cluster (err %v)", err)
	}
}

// The documentation's example applies as written, plans empty after, and
// imports.
func TestAccLLMServicePresetExample(t *testing.T) {
	env := acctest.Env(t)
	kserveCRDs(t, env)
	ex := acctest.ResourceExample(t, "aiplatform_llm_service_preset")
	cfg := acctest.Provider(env) + ex.Config
	p := presetObject("default", "llama-70b-h100")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(ex.Address, "max_concurrency_per_replica", "60"),
					resource.TestCheckResourceAttr(ex.Address, "startup_failure_threshold", "146"),
					p.Equal(env, "8", "spec", "template", "containers", "0", "resources", "limits", "nvidia.com/gpu"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{Config: cfg, ResourceName: ex.Address, ImportState: true, ImportStateId: ex.ImportID, ImportStateVerify: true},
		},
		CheckDestroy: p.Gone(env),
	})
}
