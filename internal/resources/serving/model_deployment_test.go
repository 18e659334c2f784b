package serving_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

func deploymentObject(namespace, name string) acctest.Object {
	return acctest.Object{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Namespace: namespace, Name: name}
}

func serviceObject(namespace, name string) acctest.Object {
	return acctest.Object{GVR: schema.GroupVersionResource{Version: "v1", Resource: "services"}, Namespace: namespace, Name: name}
}

// deployConfig is Llama 3 8B in bf16 (16 GB; 32 heads, 8 KV heads,
// 131072 bytes of KV per token) on the H100 pool, with the model block's
// and the resource's extra lines replaced or added by edits ("old" → "new"
// pairs) — the bad inputs below are each one edit of it.
func deployConfig(env *testenv.Env, name string, edits ...string) string {
	cfg := fmt.Sprintf(`
resource "aiplatform_model_deployment" "m" {
  name      = %q
  namespace = "default"
  template = {
    containers = [{
      name   = "server"
      image  = "vllm/vllm-openai:v0.9.0"
      args   = ["--model", "/models/llama", "--max-model-len", "32768"]
      limits = { cpu = "4", memory = "32Gi" }
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
  replicas         = 2
  model_cache = {
    mode       = "node_local"
    host_path  = "/var/lib/model-cache/default/llama-8b"
    sub_path   = "main-0123abcd"
    mount_path = "/models/llama"
  }
  #extra
}
`, name, lwsPoolLabel)
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(cfg, edits[i]) {
			panic("deployConfig: no " + edits[i])
		}
		cfg = strings.Replace(cfg, edits[i], edits[i+1], 1)
	}
	return acctest.Provider(env) + cfg
}

// deploymentHas checks the live Deployment's pod template: one GPU, the
// cache mounted read-only, the three probes as planned.
func deploymentHas(env *testenv.Env, name string, threshold int64) resource.TestCheckFunc {
	return deploymentObject("default", name).Check(env, func(obj map[string]any) error {
		spec := obj["spec"].(map[string]any)
		tmpl := spec["template"].(map[string]any)
		c := tmpl["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		if got := fmt.Sprint(c["resources"].(map[string]any)["limits"].(map[string]any)["nvidia.com/gpu"]); got != "1" {
			return fmt.Errorf("GPU limit %s, want 1", got)
		}
		mounts := fmt.Sprint(c["volumeMounts"])
		if !strings.Contains(mounts, "mountPath:/models/llama") || !strings.Contains(mounts, "readOnly:true") {
			return fmt.Errorf("mounts %s, want /models/llama read-only", mounts)
		}
		if vols := fmt.Sprint(tmpl["spec"].(map[string]any)["volumes"]); !strings.Contains(vols, "path:/var/lib/model-cache/default/llama-8b/main-0123abcd type:Directory") {
			return fmt.Errorf("volumes %s", vols)
		}
		for probe, want := range map[string]string{
			"startupProbe":   fmt.Sprintf("failureThreshold:%d httpGet:map[path:/health port:8000 scheme:HTTP] periodSeconds:10", threshold),
			"livenessProbe":  "failureThreshold:3 httpGet:map[path:/health port:8000 scheme:HTTP] periodSeconds:10",
			"readinessProbe": "failureThreshold:3 httpGet:map[path:/v1/models port:8000 scheme:HTTP] periodSeconds:5",
		} {
			if got := fmt.Sprint(c[probe]); !strings.Contains(got, want) {
				return fmt.Errorf("%s %s, want it to contain %s", probe, got, want)
			}
		}
		if got := fmt.Sprint(object(spec, "selector", "matchLabels")); got != "map[aiplatform.io/model-deployment:"+name+"]" {
			return fmt.Errorf("selector %s", got)
		}
		return nil
	})
}

func object(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		cur = cur.(map[string]any)[k]
	}
	return cur
}

// readyPods counts the Deployment's ready pods (kwok makes them ready).
func readyPods(env *testenv.Env, name string, want int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		list, err := env.Client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "aiplatform.io/model-deployment=" + name})
		if err != nil {
			return err
		}
		ready := 0
		for _, p := range list.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == "Ready" && c.Status == "True" && p.DeletionTimestamp == nil {
					ready++
				}
			}
		}
		if ready < want {
			return fmt.Errorf("%d ready pods, want %d (the apply waited for availability)", ready, want)
		}
		return nil
	}
}

// Apply, empty plan, drift repaired, import. The numbers: 8B in bf16 is
// 16 GB; one request of 32,768 tokens × 131,072 B is 4 GiB; with 1 GiB of
// overhead one H100 (81559 MiB × 0.9 = 76.97 GB usable) holds
// ⌊(76,968,728,985 − 16e9 − 2^30) ÷ 2^32⌋ = 13 such requests. Loading 16 GB
// from a node-local cache at 1 GiB/s takes 14.9 s: the startup probe allows
// ⌈(14.9 + 60) × 2 ÷ 10⌉ = 15 failures of 10 s.
func TestAccModelDeployment(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_model_deployment.m"
	dep := deploymentObject("default", "llama-8b")
	cfg := deployConfig(env, "llama-8b", "#extra", `queue_name = "serving"`)
	force := strings.Replace(cfg, "provider \"aiplatform\" {\n", "provider \"aiplatform\" {\n  force_conflicts = true\n", 1)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "default/llama-8b"),
					resource.TestCheckResourceAttr(addr, "gpu_memory", "81559Mi"),
					resource.TestCheckResourceAttr(addr, "max_concurrency_per_replica", "13"),
					resource.TestCheckResourceAttr(addr, "estimated_load_seconds", "15"),
					resource.TestCheckResourceAttr(addr, "startup_failure_threshold", "15"),
					resource.TestCheckResourceAttr(addr, "endpoint", "http://llama-8b.default.svc:80"),
					resource.TestMatchResourceAttr(addr, "fit", regexp.MustCompile(`^weights 16 GB ÷ tensor_parallel 1 = 16 GB \+ KV cache of one request 4.29 GB`)),
					dep.Equal(env, int64(2), "spec", "replicas"),
					dep.Equal(env, "serving", "metadata", "labels", "kueue.x-k8s.io/queue-name"),
					dep.Equal(env, "serving", "spec", "template", "metadata", "labels", "kueue.x-k8s.io/queue-name"),
					deploymentHas(env, "llama-8b", 15),
					serviceObject("default", "llama-8b").Equal(env, int64(8000), "spec", "ports", "0", "targetPort"),
					serviceObject("default", "llama-8b").Equal(env, int64(80), "spec", "ports", "0", "port"),
					serviceObject("default", "llama-8b").Equal(env, "llama-8b", "spec", "selector", "aiplatform.io/model-deployment"),
					serviceObject("default", "llama-8b").Equal(env, "Deployment", "metadata", "ownerReferences", "0", "kind"),
					dep.Equal(env, int64(2), "status", "availableReplicas"),
					readyPods(env, "llama-8b", 2),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// Someone removes the liveness probe, lowers the startup
				// threshold and changes the image: the plan shows the
				// repair (drift: exit code 2 for -detailed-exitcode, and a
				// destroy's refresh is not blocked) and warns of the conflict.
				PreConfig: func() {
					dep.Edit(t, env, "kubectl-edit", func(o map[string]any) {
						c := object(o, "spec", "template", "spec").(map[string]any)["containers"].([]any)[0].(map[string]any)
						delete(c, "livenessProbe")
						c["startupProbe"].(map[string]any)["failureThreshold"] = int64(3)
						c["image"] = "vllm/vllm-openai:latest"
					})
				},
				Config:             cfg,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				// Its apply, not forced, is refused by the API server with
				// each field it would take back from that manager, and
				// changes nothing.
				Config: cfg,
				ExpectError: acctest.ErrorMatching(`startupProbe.failureThreshold (conflict with "kubectl-edit"`,
					`image: vllm/vllm-openai:latest → vllm/vllm-openai:v0.9.0`, `livenessProbe: (absent) →`, `failureThreshold: 3 → 15`),
			},
			{
				// With force_conflicts the repair is planned and applied.
				PreConfig: func() {
					// The refused apply above changed nothing.
					if err := dep.Equal(env, "vllm/vllm-openai:latest", "spec", "template", "spec", "containers", "0", "image")(nil); err != nil {
						t.Fatal(err)
					}
				},
				Config: force,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("liveness_path"), knownvalue.StringExact("/health")),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					deploymentHas(env, "llama-8b", 15),
					dep.Equal(env, "vllm/vllm-openai:v0.9.0", "spec", "template", "spec", "containers", "0", "image"),
				),
			},
			{
				// Scale to zero, chosen: a warning, no wait, no pods.
				Config: deployConfig(env, "llama-8b", "replicas         = 2", "replicas = 0", "#extra", `queue_name = "serving"
  allow_scale_to_zero = true`),
				Check:            resource.ComposeAggregateTestCheckFunc(dep.Equal(env, int64(0), "spec", "replicas")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{ResourceName: addr, ImportState: true, ImportStateVerify: true, ImportStateId: "default/llama-8b"},
		},
		CheckDestroy: dep.Gone(env),
	})
}

// Bad input is refused at plan time with the attribute path and the
// numbers, and nothing is created in the cluster.
func TestAccModelDeploymentValidation(t *testing.T) {
	env := acctest.Env(t)
	plan := func(want *regexp.Regexp, edits ...string) resource.TestStep {
		return resource.TestStep{Config: deployConfig(env, "bad", edits...), PlanOnly: true, ExpectError: want}
	}
	const server = `name   = "server"`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			// 70B in bf16 on one H100: 140 GB of weights on a 76.97 GB card.
			plan(acctest.ErrorMatching("gpus_per_replica", "one replica cannot hold one request of 32768 tokens: weights 140 GB ÷ tensor_parallel 1 = 140 GB",
				"but a 85.52 GB GPU holds 76.97 GB after the 0.1 reserve; at least 2 GPUs"),
				"params_billion           = 8", "params_billion = 70"),
			// The weights fit, one request of a million tokens (131 GB of KV) does not.
			plan(acctest.ErrorMatching("gpus_per_replica", "one replica cannot hold one request of 1000000 tokens", "KV cache of one request 131.07 GB ÷ 1 = 131.07 GB"),
				"context_length           = 32768", "context_length = 1000000"),
			// A replica larger than a node: 16 GPUs on 8-GPU nodes.
			plan(acctest.ErrorMatching("gpus_per_replica", "each replica asks for 16 GPUs, but the 2 nodes matching {lwspool=h100} have at most 8 allocatable", "aiplatform_lws_group"),
				"gpus_per_replica = 1", "gpus_per_replica = 16"),
			// The tensor-parallel rule: 3 does not divide 32 heads.
			plan(acctest.ErrorMatching("gpus_per_replica", "tensor_parallel 3 does not divide the model's 32 attention heads", "valid values: 1, 2, 4, 8, 16, 32"),
				"gpus_per_replica = 1", "gpus_per_replica = 3"),
			// 6 divides 48 heads but neither divides nor is a multiple of 8 KV heads.
			plan(acctest.ErrorMatching("gpus_per_replica", "tensor_parallel 6 neither divides the model's 8 KV heads"),
				"gpus_per_replica = 1", "gpus_per_replica = 6", "attention_heads          = 32", "attention_heads = 48"),
			plan(acctest.ErrorMatching("model.kv_heads", "6 KV heads do not divide the 32 attention heads"), "kv_heads                 = 8", "kv_heads = 6"),
			plan(acctest.ErrorMatching("Scale to zero not allowed", "replicas: replicas = 0 leaves the service without a server", "allow_scale_to_zero = true"), "replicas         = 2", "replicas = 0"),
			plan(acctest.ErrorMatching("liveness_path", `"/ready" is a readiness or dependency check`, "readiness_path"), "#extra", `liveness_path = "/ready"`),
			plan(acctest.ErrorMatching("liveness_path", `"/health/dependencies" is a readiness or dependency check`), "#extra", `liveness_path = "/health/dependencies"`),
			plan(acctest.ErrorMatching("liveness_path", `"/health?upstream=db" has a query`), "#extra", `liveness_path = "/health?upstream=db"`),
			plan(acctest.ErrorMatching("liveness_path", `"//db.internal/health" names another host`), "#extra", `liveness_path = "//db.internal/health"`),
			plan(acctest.ErrorMatching("template.containers", `no container is named "server"`, `the containers are vllm`), server, `name = "vllm"`),
			plan(acctest.ErrorMatching("Probe set by the resource", "template.containers[0].liveness_probe: the probes of the managed container"),
				server, server+"\n      liveness_probe = { http_get = { path = \"/metrics\", port = \"8000\" } }"),
			plan(acctest.ErrorMatching("template.containers[0].limits", "nvidia.com/gpu of the managed container comes from gpus_per_replica"),
				`limits = { cpu = "4", memory = "32Gi" }`, `limits = { cpu = "4", memory = "32Gi", "nvidia.com/gpu" = "1" }`),
			plan(acctest.ErrorMatching("model.dtype", "params_billion needs dtype"), `dtype                    = "bf16"`, ""),
			plan(acctest.ErrorMatching("model.params_billion", "not both"), "#extra", "", "context_length           = 32768", "context_length = 32768\n    model_bytes = 16000000000"),
			plan(acctest.ErrorMatching("gpu_memory", `"80 GB"`), "#extra", `gpu_memory = "80 GB"`),
			plan(acctest.ErrorMatching("reserve_fraction", "less than 1"), "#extra", `reserve_fraction = 1`),
			plan(acctest.ErrorMatching("gpu_memory", "none of the 1 live nodes matching {lwspool=nolabel} carries the label nvidia.com/gpu.memory"), `= "h100"`, `= "nolabel"`),
			plan(acctest.ErrorMatching("model_cache.claim_name", "mode pvc mounts the cache's claim"), `mode       = "node_local"`, `mode = "pvc"`),
		},
	})
	for _, o := range []acctest.Object{deploymentObject("default", "bad"), serviceObject("default", "bad")} {
		if obj, err := o.Get(env); err != nil || obj != nil {
			t.Errorf("a refused plan left %s in the cluster (err %v)", o.Name, err)
		}
	}
}

// The wait for readiness runs under timeouts.create (the deprecated timeout
// filling in where the block is silent): 20 one-GPU replicas on a pool of
// 16 GPUs never become available, so each create fails naming the
// timeout, the pods that did not start and how to give it more time; the
// Deployment stays (tainted) for the next apply to replace.
func TestAccModelDeploymentTimeouts(t *testing.T) {
	env := acctest.Env(t)
	dep := deploymentObject("default", "too-many")
	tooMany := func(extra string) string {
		return deployConfig(env, "too-many", "replicas         = 2", "replicas         = 20", "#extra", extra)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				// The block wins over the deprecated attribute.
				Config: tooMany(`timeout = "10m"
  timeouts {
    create = "4s"
  }`),
				ExpectError: acctest.ErrorMatching("Deployment default/too-many not ready", "not available within 4s (timeouts)",
					"Pods not ready:", "Insufficient nvidia.com/gpu", `timeouts { create = "…" }`),
			},
			{
				// Alone, the deprecated attribute still bounds the wait.
				PreConfig: func() {
					if err := dep.Equal(env, int64(20), "spec", "replicas")(nil); err != nil {
						t.Fatalf("the timed-out create did not leave its Deployment: %v", err)
					}
				},
				Config:      tooMany(`timeout = "3s"`),
				ExpectError: acctest.ErrorMatching("not available within 3s (timeouts)"),
			},
		},
		CheckDestroy: dep.Gone(env),
	})
}
