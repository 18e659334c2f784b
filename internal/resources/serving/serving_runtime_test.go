package serving_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// KServe v0.20.0's CRDs, read from the Go module cache: the runtimes and
// InferenceServices (charts/kserve-crd) and the LLMInferenceService configs
// (charts/kserve-llmisvc-crd). Only the CRD files are installed: the
// charts' clusterstoragecontainers template is Helm-templated.
const kserveVersion = "v0.20.0"

var kserveCRDsOnce struct {
	sync.Once
	err error
}

func kserveCRDs(t *testing.T, env *testenv.Env) {
	t.Helper()
	kserveCRDsOnce.Do(func() {
		ctx := context.Background()
		mod, err := testenv.ModuleDir(ctx, "github.com/kserve/kserve", kserveVersion)
		if err != nil {
			kserveCRDsOnce.err = err
			return
		}
		dir, err := os.MkdirTemp("", "kserve-crds")
		if err != nil {
			kserveCRDsOnce.err = err
			return
		}
		defer os.RemoveAll(dir)
		for _, f := range []string{
			"kserve-crd/templates/serving.kserve.io_clusterservingruntimes.yaml",
			"kserve-crd/templates/serving.kserve.io_servingruntimes.yaml",
			"kserve-crd/templates/serving.kserve.io_inferenceservices.yaml",
			"kserve-llmisvc-crd/templates/serving.kserve.io_llminferenceserviceconfigs.yaml",
			"kserve-llmisvc-crd/templates/serving.kserve.io_llminferenceservices.yaml",
		} {
			b, err := os.ReadFile(filepath.Join(mod, "charts", f))
			if err != nil {
				kserveCRDsOnce.err = err
				return
			}
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600); err != nil {
				kserveCRDsOnce.err = err
				return
			}
		}
		kserveCRDsOnce.err = env.ApplyCRDs(ctx, dir)
	})
	if kserveCRDsOnce.err != nil {
		t.Fatal(kserveCRDsOnce.err)
	}
}

func clusterRuntimeObject(name string) acctest.Object {
	return acctest.Object{GVR: schema.GroupVersionResource{Group: "serving.kserve.io", Version: "v1alpha1", Resource: "clusterservingruntimes"}, Name: name}
}

func runtimeObject(namespace, name string) acctest.Object {
	return acctest.Object{GVR: schema.GroupVersionResource{Group: "serving.kserve.io", Version: "v1alpha1", Resource: "servingruntimes"},
		Namespace: namespace, Name: name}
}

// runtimeConfig is a vLLM runtime for Llama 3 8B in bf16 (16 GB; 32
// heads, 8 KV heads, 131072 bytes of KV per token) on the H100 pool, the
// weights from a node-local model cache, the Hugging Face token from a
// Secret — edited by "old" → "new" pairs as deployConfig is.
func runtimeConfig(env *testenv.Env, name string, edits ...string) string {
	cfg := fmt.Sprintf(`
resource "aiplatform_serving_runtime" "r" {
  name = %q
  #namespace
  supported_model_formats = [
    { name = "vLLM", version = "1", auto_select = true, priority = 2 },
    { name = "huggingface", version = "1" },
  ]
  protocol_versions = ["v2", "v1"]
  template = {
    containers = [{
      name   = "kserve-container"
      image  = "vllm/vllm-openai:v0.9.0"
      args   = ["--model", "/mnt/model-cache", "--port", "8080", "--served-model-name", "{{.Name}}", "--max-model-len", "32768"]
      env = [
        { name = "HF_TOKEN", value_from = { secret_key_ref = { name = "hf-token", key = "token" } } },
        { name = "VLLM_LOGGING_LEVEL", value = "INFO" },
      ]
      requests = { cpu = "4", memory = "32Gi" }
      limits   = { cpu = "8", memory = "48Gi" }
    }]
    node_selector = { %s = "h100" }
    tolerations   = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
    annotations   = { "prometheus.kserve.io/port" = "8080" }
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
  #extra
}
`, name, lwsPoolLabel)
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(cfg, edits[i]) {
			panic("runtimeConfig: no " + edits[i])
		}
		cfg = strings.Replace(cfg, edits[i], edits[i+1], 1)
	}
	return acctest.Provider(env) + cfg
}

// runtimeHas checks the live runtime's pod: one GPU, the cache mounted
// read-only, the three probes as planned, the Secret reference, the pool.
func runtimeHas(o acctest.Object, env *testenv.Env, threshold int64) resource.TestCheckFunc {
	return o.Check(env, func(obj map[string]any) error {
		spec := obj["spec"].(map[string]any)
		c := spec["containers"].([]any)[0].(map[string]any)
		if got := fmt.Sprint(object(c, "resources", "limits", "nvidia.com/gpu")); got != "1" {
			return fmt.Errorf("GPU limit %s, want 1", got)
		}
		if got := fmt.Sprint(object(c, "resources", "requests", "nvidia.com/gpu")); got != "1" {
			return fmt.Errorf("GPU request %s, want 1 (the request map is given, so the GPUs go in it too)", got)
		}
		if mounts := fmt.Sprint(c["volumeMounts"]); !strings.Contains(mounts, "mountPath:/mnt/model-cache") || !strings.Contains(mounts, "readOnly:true") {
			return fmt.Errorf("mounts %s, want /mnt/model-cache read-only", mounts)
		}
		if vols := fmt.Sprint(spec["volumes"]); !strings.Contains(vols, "path:/var/lib/model-cache/default/llama-8b/main-0123abcd type:Directory") {
			return fmt.Errorf("volumes %s", vols)
		}
		for probe, want := range map[string]string{
			"startupProbe":   fmt.Sprintf("failureThreshold:%d httpGet:map[path:/health port:8080] periodSeconds:10", threshold),
			"livenessProbe":  "failureThreshold:3 httpGet:map[path:/health port:8080] periodSeconds:10",
			"readinessProbe": "failureThreshold:3 httpGet:map[path:/v1/models port:8080] periodSeconds:5",
		} {
			if got := fmt.Sprint(c[probe]); !strings.Contains(got, want) {
				return fmt.Errorf("%s %s, want it to contain %s", probe, got, want)
			}
		}
		if env := fmt.Sprint(c["env"]); !strings.Contains(env, "secretKeyRef:map[key:token name:hf-token]") {
			return fmt.Errorf("env %s, want HF_TOKEN from Secret hf-token", env)
		}
		if got := fmt.Sprint(spec["nodeSelector"]); got != "map["+lwsPoolLabel+":h100]" {
			return fmt.Errorf("nodeSelector %s", got)
		}
		if got := fmt.Sprint(spec["supportedModelFormats"]); got != "[map[autoSelect:true name:vLLM priority:2 version:1] map[name:huggingface version:1]]" {
			return fmt.Errorf("supportedModelFormats %s", got)
		}
		if got := fmt.Sprint(object(spec, "annotations")); got != "map[prometheus.kserve.io/port:8080]" {
			return fmt.Errorf("pod annotations %s", got)
		}
		return nil
	})
}

// Apply, empty plan, drift repaired, deleted by hand and re-created,
// import. The numbers are the model deployment's: 13 requests of 32,768
// tokens per H100, and a startup probe of 15 failures of 10 s for 16 GB
// from a node-local cache at 1 GiB/s.
func TestAccServingRuntimeCluster(t *testing.T) {
	env := acctest.Env(t)
	kserveCRDs(t, env)
	addr := "aiplatform_serving_runtime.r"
	rt := clusterRuntimeObject("vllm-llama-8b")
	cfg := runtimeConfig(env, "vllm-llama-8b")
	force := strings.Replace(cfg, "provider \"aiplatform\" {\n", "provider \"aiplatform\" {\n  force_conflicts = true\n", 1)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "vllm-llama-8b"),
					resource.TestCheckResourceAttr(addr, "kind", "ClusterServingRuntime"),
					resource.TestCheckResourceAttr(addr, "gpu_memory", "81559Mi"),
					resource.TestCheckResourceAttr(addr, "max_concurrency_per_replica", "13"),
					resource.TestCheckResourceAttr(addr, "estimated_load_seconds", "15"),
					resource.TestCheckResourceAttr(addr, "startup_failure_threshold", "15"),
					resource.TestMatchResourceAttr(addr, "fit", regexp.MustCompile(`^weights 16 GB ÷ tensor_parallel 1 = 16 GB \+ KV cache of one request 4.29 GB`)),
					rt.Equal(env, []any{"v2", "v1"}, "spec", "protocolVersions"),
					rt.Equal(env, false, "spec", "multiModel"),
					runtimeHas(rt, env, 15),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// Someone removes the liveness probe and changes the image:
				// the plan shows the repair (with a warning naming the
				// conflict) ...
				PreConfig: func() {
					rt.Edit(t, env, "kubectl-edit", func(o map[string]any) {
						c := object(o, "spec").(map[string]any)["containers"].([]any)[0].(map[string]any)
						delete(c, "livenessProbe")
						c["image"] = "vllm/vllm-openai:latest"
					})
				},
				Config:             cfg,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				// ... and the apply, not forced, is refused naming each field
				// it would take back.
				Config:      cfg,
				ExpectError: acctest.ErrorMatching(`conflict with "kubectl-edit"`, `image: vllm/vllm-openai:latest → vllm/vllm-openai:v0.9.0`, `livenessProbe: (absent) →`),
			},
			{
				Config: force,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("liveness_path"), knownvalue.StringExact("/health")),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					runtimeHas(rt, env, 15),
					rt.Equal(env, "vllm/vllm-openai:v0.9.0", "spec", "containers", "0", "image"),
				),
			},
			{
				// Deleted out of band: the plan creates it again.
				PreConfig: func() { rt.Delete(t, env) },
				Config:    cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: runtimeHas(rt, env, 15),
			},
			{ResourceName: addr, ImportState: true, ImportStateVerify: true, ImportStateId: "vllm-llama-8b"},
		},
		CheckDestroy: rt.Gone(env),
	})
}

// A namespaced ServingRuntime without a model: no sizing, the minimal
// startup probe with a warning, a PVC cache; the pod_template carries what
// no attribute types, and an import reads it all back.
func TestAccServingRuntimeNamespaced(t *testing.T) {
	env := acctest.Env(t)
	kserveCRDs(t, env)
	addr := "aiplatform_serving_runtime.r"
	rt := runtimeObject("default", "vllm-any")
	cfg := runtimeConfig(env, "vllm-any", "#namespace", `namespace = "default"`,
		`  model = {
    params_billion           = 8
    dtype                    = "bf16"
    context_length           = 32768
    kv_cache_bytes_per_token = 131072
    attention_heads          = 32
    kv_heads                 = 8
  }
`, "",
		`mode       = "node_local"
    host_path  = "/var/lib/model-cache/default/llama-8b"`, `claim_name = "llama-cache"`,
		`annotations   = { "prometheus.kserve.io/port" = "8080" }`, `pod_template  = yamlencode({ spec = { hostIPC = true } })`,
		"gpus_per_replica = 1", "gpus_per_replica = 2")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "default/vllm-any"),
					resource.TestCheckResourceAttr(addr, "kind", "ServingRuntime"),
					resource.TestCheckResourceAttr(addr, "startup_failure_threshold", "12"),
					resource.TestCheckNoResourceAttr(addr, "fit"),
					resource.TestCheckNoResourceAttr(addr, "gpu_memory"),
					rt.Equal(env, true, "spec", "hostIPC"),
					rt.Equal(env, "2", "spec", "containers", "0", "resources", "limits", "nvidia.com/gpu"),
					rt.Equal(env, int64(12), "spec", "containers", "0", "startupProbe", "failureThreshold"),
					rt.Equal(env, "llama-cache", "spec", "volumes", "0", "persistentVolumeClaim", "claimName"),
					rt.Equal(env, "main-0123abcd", "spec", "containers", "0", "volumeMounts", "0", "subPath"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			// The import writes pod_template in its own YAML spelling of the
			// same document (yamlencode quotes keys): compared by value above.
			{ResourceName: addr, ImportState: true, ImportStateVerify: true, ImportStateId: "default/vllm-any",
				ImportStateVerifyIgnore: []string{"template.pod_template"}},
		},
		CheckDestroy: rt.Gone(env),
	})
}

// Bad input is refused at plan time with the attribute path and the
// numbers, and nothing is created in the cluster.
func TestAccServingRuntimeValidation(t *testing.T) {
	env := acctest.Env(t)
	kserveCRDs(t, env)
	// A runtime someone else published: vLLM format, priority 5, protocol v2.
	taken := clusterRuntimeObject("published-vllm")
	if _, err := env.Dynamic.Resource(taken.GVR).Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "serving.kserve.io/v1alpha1", "kind": "ClusterServingRuntime", "metadata": map[string]any{"name": taken.Name},
		"spec": map[string]any{
			"supportedModelFormats": []any{map[string]any{"name": "vllm", "version": "1", "autoSelect": true, "priority": int64(5)}},
			"protocolVersions":      []any{"v2"},
			"containers":            []any{map[string]any{"name": "kserve-container", "image": "vllm/vllm-openai:v0.9.0"}},
		},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { taken.Delete(t, env) })
	plan := func(want *regexp.Regexp, edits ...string) resource.TestStep {
		return resource.TestStep{Config: runtimeConfig(env, "bad", edits...), PlanOnly: true, ExpectError: want}
	}
	const server = `name   = "kserve-container"`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			// 70B in bf16 on one H100: 140 GB of weights on a 76.97 GB card.
			plan(acctest.ErrorMatching("gpus_per_replica", "one replica cannot hold one request of 32768 tokens: weights 140 GB ÷ tensor_parallel 1 = 140 GB",
				"but a 85.52 GB GPU holds 76.97 GB after the 0.1 reserve"), "params_billion           = 8", "params_billion = 70"),
			// The weights fit, one request of a million tokens (131 GB of KV) does not.
			plan(acctest.ErrorMatching("gpus_per_replica", "one request of 1000000 tokens", "KV cache of one request 131.07 GB ÷ 1 = 131.07 GB"),
				"context_length           = 32768", "context_length = 1000000"),
			// More GPUs than a node of the pool has.
			plan(acctest.ErrorMatching("gpus_per_replica", "each replica asks for 16 GPUs, but the 2 nodes matching {lwspool=h100} have at most 8 allocatable"),
				"gpus_per_replica = 1", "gpus_per_replica = 16"),
			// The tensor-parallel rule: 3 does not divide 32 heads.
			plan(acctest.ErrorMatching("gpus_per_replica", "tensor_parallel 3 does not divide the model's 32 attention heads", "valid values: 1, 2, 4, 8, 16, 32"),
				"gpus_per_replica = 1", "gpus_per_replica = 3"),
			plan(acctest.ErrorMatching("model.kv_heads", "6 KV heads do not divide the 32 attention heads"), "kv_heads                 = 8", "kv_heads = 6"),
			// GPU memory that cannot be read from the pool, and none given.
			plan(acctest.ErrorMatching("gpu_memory", "none of the 1 live nodes matching {lwspool=nolabel} carries the label nvidia.com/gpu.memory"), `= "h100"`, `= "nolabel"`),
			// Liveness on a downstream path.
			plan(acctest.ErrorMatching("liveness_path", `"/health/dependencies" is a readiness or dependency check`, "readiness_path"), "#extra", `liveness_path = "/health/dependencies"`),
			plan(acctest.ErrorMatching("liveness_path", `"/health?upstream=db" has a query`), "#extra", `liveness_path = "/health?upstream=db"`),
			// Formats KServe refuses or cannot choose between.
			plan(acctest.ErrorMatching("supported_model_formats[1]", `format "VLLM" version "1" is already listed at supported_model_formats[0]`),
				`{ name = "huggingface", version = "1" }`, `{ name = "VLLM", version = "1" }`),
			plan(acctest.ErrorMatching("supported_model_formats[1].priority", "priority 1 only orders runtimes KServe selects automatically"),
				`{ name = "huggingface", version = "1" }`, `{ name = "huggingface", version = "1", priority = 1 }`),
			plan(acctest.ErrorMatching("supported_model_formats[1].priority", `format "vllm" has priority 3 here and 2 at supported_model_formats[0]`),
				`{ name = "huggingface", version = "1" }`, `{ name = "vllm", version = "2", auto_select = true, priority = 3 }`),
			plan(acctest.ErrorMatching("supported_model_formats[0].priority", `ClusterServingRuntime "published-vllm" already auto-selects format "vLLM" with priority 5`),
				"auto_select = true, priority = 2", "auto_select = true, priority = 5"),
			plan(regexp.MustCompile(`(?s)protocol_versions.*value must be one of`), `["v2", "v1"]`, `["v2", "v3"]`),
			// Pod fields a ServingRuntime does not have.
			plan(acctest.ErrorMatching("template.service_account_name", "a ServingRuntime's pod spec has no service_account_name", "spec.predictor.serviceAccountName"),
				`annotations   = { "prometheus.kserve.io/port" = "8080" }`, `service_account_name = "vllm"`),
			plan(acctest.ErrorMatching("template.init_containers", "a ServingRuntime's pod spec has no init_containers"),
				`annotations   = { "prometheus.kserve.io/port" = "8080" }`, `init_containers = [{ name = "fetch", image = "busybox" }]`),
			plan(acctest.ErrorMatching("template.pod_template", "a ServingRuntime's pod spec has no spec.priorityClassName, spec.runtimeClassName"),
				`annotations   = { "prometheus.kserve.io/port" = "8080" }`, `pod_template = yamlencode({ spec = { priorityClassName = "serving", runtimeClassName = "nvidia" } })`),
			// The managed container: present, and its GPUs and probes left to the resource.
			plan(acctest.ErrorMatching("template.containers", `no container is named "kserve-container"`, "the containers are vllm"), server, `name = "vllm"`),
			plan(acctest.ErrorMatching("template.containers[0].limits", "nvidia.com/gpu of the managed container comes from gpus_per_replica"),
				`limits   = { cpu = "8", memory = "48Gi" }`, `limits   = { cpu = "8", memory = "48Gi", "nvidia.com/gpu" = "1" }`),
			plan(acctest.ErrorMatching("Probe set by the resource", "template.containers[0].startup_probe"),
				server, server+"\n      startup_probe = { http_get = { path = \"/health\", port = \"8080\" } }"),
			plan(acctest.ErrorMatching("model_cache.claim_name", "mode pvc mounts the cache's claim"), `mode       = "node_local"`, `mode = "pvc"`),
			// KServe's own model directory.
			plan(acctest.ErrorMatching("Mount path taken by KServe", "model_cache.mount_path: KServe mounts its own model directory at /mnt/models"),
				`mount_path = "/mnt/model-cache"`, `mount_path = "/mnt/models/"`),
		},
	})
	for _, o := range []acctest.Object{clusterRuntimeObject("bad"), runtimeObject("default", "bad")} {
		if obj, err := o.Get(env); err != nil || obj != nil {
			t.Errorf("a refused plan left %s in the cluster (err %v)", o.Name, err)
		}
	}
}

// The documentation's example applies as written, plans empty after, and
// imports.
func TestAccServingRuntimeExample(t *testing.T) {
	env := acctest.Env(t)
	kserveCRDs(t, env)
	ex := acctest.ResourceExample(t, "aiplatform_serving_runtime")
	cfg := acctest.Provider(env) + ex.Config
	rt := clusterRuntimeObject("vllm-llama-8b")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(ex.Address, "max_concurrency_per_replica", "13"),
					resource.TestCheckResourceAttr(ex.Address, "startup_failure_threshold", "15"),
					rt.Equal(env, "1", "spec", "containers", "0", "resources", "limits", "nvidia.com/gpu"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{Config: cfg, ResourceName: ex.Address, ImportState: true, ImportStateId: ex.ImportID, ImportStateVerify: true},
		},
		CheckDestroy: rt.Gone(env),
	})
}
