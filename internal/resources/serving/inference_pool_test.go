package serving_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

func inferencePoolObject(namespace, name string) acctest.Object {
	return acctest.Object{GVR: schema.GroupVersionResource{Group: "inference.networking.k8s.io", Version: "v1", Resource: "inferencepools"}, Namespace: namespace, Name: name}
}

// poolConfig is a model deployment (two replicas of Llama 3 8B on the H100
// pool, made Ready by kwok) and an inference pool over its pods, with the
// pool block's lines replaced or added by edits ("old" → "new" pairs).
func poolConfig(env *testenv.Env, name string, edits ...string) string {
	cfg := deployConfig(env, name+"-model", "#extra", "") + fmt.Sprintf(`
resource "aiplatform_inference_pool" "p" {
  name         = %q
  namespace    = "default"
  selector     = { "aiplatform.io/model-deployment" = aiplatform_model_deployment.m.name }
  target_ports = [8000]
  serving_group = {
    kind = "Deployment"
    name = aiplatform_model_deployment.m.name
  }
  failure_mode     = "FailOpen"
  picker_log_level = 4
  picker_args      = ["--zap-encoder=console"]
  picker_template = {
    containers = [{ name = "epp", requests = { cpu = "100m", memory = "128Mi" } }]
  }
  #pool
  timeouts {
    create = "5m"
  }
}
`, name)
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(cfg, edits[i]) {
			panic("poolConfig: no " + edits[i])
		}
		cfg = strings.Replace(cfg, edits[i], edits[i+1], 1)
	}
	return cfg
}

// pickerDiscovered checks, in the picker's own log, that the running
// picker read the pool and added each Ready pod of the model deployment:
// it logs "Pod added" for each while it syncs the pool, before it reports
// Ready (which the apply waited for).
func pickerDiscovered(env *testenv.Env, pool, model string, want int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		pickers, err := env.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "aiplatform.io/inference-pool-epp=" + pool})
		if err != nil {
			return err
		}
		models, err := env.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "aiplatform.io/model-deployment=" + model})
		if err != nil {
			return err
		}
		var ready []string
		for _, p := range models.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == "Ready" && c.Status == "True" && p.DeletionTimestamp == nil {
					ready = append(ready, p.Name)
				}
			}
		}
		if len(ready) != want {
			return fmt.Errorf("%d ready model pods, want %d", len(ready), want)
		}
		found := 0
		for _, picker := range pickers.Items {
			if picker.DeletionTimestamp != nil {
				continue
			}
			found++
			log, err := os.ReadFile(filepath.Join(env.Dir, "pods", "default_"+picker.Name+".log"))
			if err != nil {
				return fmt.Errorf("the picker pod %s's log (run by the pod runner): %w", picker.Name, err)
			}
			for _, p := range ready {
				if !regexp.MustCompile(`Pod added[^\n]*[/"]` + regexp.QuoteMeta(p) + `["-]`).Match(log) {
					return fmt.Errorf("picker %s did not log adding pod %s:\n%s", picker.Name, p, tail(string(log), 30))
				}
			}
		}
		if found == 0 {
			return fmt.Errorf("no picker pod")
		}
		return nil
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// The pool over a model deployment's pods with the real picker (v1.6.0's
// lwepp, run by the pod runner with its ServiceAccount's token, so the
// Role is what it gets): applied and accepted by the API server (the CRD
// from the module cache), the picker Ready (its gRPC health says SERVING
// once it has read the pool) and having added both model pods, an empty
// plan, the picker's Deployment deleted out of band and put back, import.
func TestAccInferencePool(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_inference_pool.p"
	pool := inferencePoolObject("default", "llama")
	picker := deploymentObject("default", "llama-epp")
	cfg := poolConfig(env, "llama")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "default/llama"),
					resource.TestCheckResourceAttr(addr, "picker_name", "llama-epp"),
					resource.TestCheckResourceAttr(addr, "picker_endpoint", "llama-epp.default.svc:9002"),
					pool.Equal(env, "llama-model", "spec", "selector", "matchLabels", "aiplatform.io/model-deployment"),
					pool.Equal(env, int64(8000), "spec", "targetPorts", "0", "number"),
					pool.Equal(env, "llama-epp", "spec", "endpointPickerRef", "name"),
					pool.Equal(env, int64(9002), "spec", "endpointPickerRef", "port", "number"),
					pool.Equal(env, "FailOpen", "spec", "endpointPickerRef", "failureMode"),
					pool.Equal(env, "http", "spec", "appProtocol"),
					picker.Equal(env, int64(1), "status", "availableReplicas"),
					picker.Equal(env, "InferencePool", "metadata", "ownerReferences", "0", "kind"),
					picker.Equal(env, "llama-epp", "spec", "template", "spec", "serviceAccountName"),
					picker.Equal(env, "100m", "spec", "template", "spec", "containers", "0", "resources", "requests", "cpu"),
					serviceObject("default", "llama-epp").Equal(env, int64(9002), "spec", "ports", "0", "port"),
					acctest.Object{GVR: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}, Namespace: "default", Name: "llama-epp"}.
						Equal(env, "inferencepools", "rules", "1", "resources", "0"),
					pickerDiscovered(env, "llama", "llama-model", 2),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// The picker's Deployment deleted out of band: the plan
				// puts it back, and the picker runs again.
				PreConfig: func() { picker.Delete(t, env) },
				Config:    cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					picker.Equal(env, int64(1), "status", "availableReplicas"),
					pickerDiscovered(env, "llama", "llama-model", 2),
				),
			},
			{
				// A change of the picker: two replicas, FailClose.
				Config: poolConfig(env, "llama", `failure_mode     = "FailOpen"`, "picker_replicas = 2"),
				Check: resource.ComposeAggregateTestCheckFunc(
					picker.Equal(env, int64(2), "status", "availableReplicas"),
					pool.Equal(env, "FailClose", "spec", "endpointPickerRef", "failureMode"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{ResourceName: addr, ImportState: true, ImportStateVerify: true, ImportStateId: "default/llama", ImportStateVerifyIgnore: []string{"timeouts", "serving_group"}},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(pool.Gone(env), picker.Gone(env), serviceObject("default", "llama-epp").Gone(env)),
	})
}

// poolOnly is an inference pool alone (named "bad") with its lines
// replaced by edits, for plans that must be refused.
func poolOnly(env *testenv.Env, edits ...string) string {
	cfg := acctest.Provider(env) + `
resource "aiplatform_inference_pool" "p" {
  name         = "bad"
  namespace    = "default"
  selector     = { app = "llama" }
  target_ports = [8000]
  #pool
}
`
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(cfg, edits[i]) {
			panic("poolOnly: no " + edits[i])
		}
		cfg = strings.Replace(cfg, edits[i], edits[i+1], 1)
	}
	return cfg
}

// Bad input is refused at plan time with the attribute path, and nothing
// is created: a selector that misses the serving group's pod labels (the
// live Deployment's, or the labels given for a group not created yet; both
// label sets shown), bad ports, a bad failure mode or protocol, picker
// flags the picker does not accept or the resource sets, a picker port that
// collides with the picker's own, the picker container's fields.
func TestAccInferencePoolValidation(t *testing.T) {
	env := acctest.Env(t)
	group := deploymentObject("default", "pool-group")
	dep := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "pool-group", "namespace": "default"},
		"spec": map[string]any{
			"replicas": int64(0),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "llama"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "llama", "tier": "serving"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "server", "image": "vllm/vllm-openai:v0.9.0"}}},
			},
		},
	}}
	if _, err := env.Dynamic.Resource(group.GVR).Namespace("default").Create(context.Background(), dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { group.Delete(t, env) })
	// A LeaderWorkerSet whose pods are labelled app=sglang (and, by the LWS
	// controller, leaderworkerset.sigs.k8s.io/name=pool-lws).
	lwsGroup := acctest.Object{GVR: schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}, Namespace: "default", Name: "pool-lws"}
	lws := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
		"metadata": map[string]any{"name": "pool-lws", "namespace": "default"},
		"spec": map[string]any{
			"replicas": int64(1),
			"leaderWorkerTemplate": map[string]any{
				"size": int64(1),
				"workerTemplate": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"app": "sglang"}},
					"spec":     map[string]any{"containers": []any{map[string]any{"name": "server", "image": "lmsysorg/sglang:v0.4.6"}}},
				},
			},
		},
	}}
	if _, err := env.Dynamic.Resource(lwsGroup.GVR).Namespace("default").Create(context.Background(), lws, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lwsGroup.Delete(t, env) })
	plan := func(want *regexp.Regexp, edits ...string) resource.TestStep {
		return resource.TestStep{Config: poolOnly(env, edits...), PlanOnly: true, ExpectError: want}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			plan(acctest.ErrorMatching("Selector does not match the serving group", "selector: ", "app is \"llama\" on the pods, \"mistral\" in the selector",
				"selector: {app=mistral}", "live Deployment pod template", "{app=llama, tier=serving}"),
				`{ app = "llama" }`, `{ app = "mistral" }`, "#pool", `serving_group = { kind = "Deployment", name = "pool-group" }`),
			plan(acctest.ErrorMatching("Selector does not match the serving group", "selector: ", "the pods have no label model", "{app=llama, model=x}", "{app=llama, tier=serving}"),
				`{ app = "llama" }`, `{ app = "llama", model = "x" }`, "#pool", `serving_group = { kind = "Deployment", name = "pool-group" }`),
			plan(acctest.ErrorMatching("Selector does not match the serving group", "selector: ", "LeaderWorkerSet default/not-yet", "serving_group.labels", "{app=sglang, leaderworkerset.sigs.k8s.io/name=not-yet}"),
				"#pool", `serving_group = { kind = "LeaderWorkerSet", name = "not-yet", labels = { app = "sglang" } }`),
			plan(acctest.ErrorMatching("Selector does not match the serving group", "selector: ", "LeaderWorkerSet default/pool-lws",
				"app is \"sglang\" on the pods, \"llama\" in the selector", "live LeaderWorkerSet pod template", "{app=sglang, leaderworkerset.sigs.k8s.io/name=pool-lws}"),
				"#pool", `serving_group = { kind = "LeaderWorkerSet", name = "pool-lws" }`),
			// A selector that matches the live group plans (the group has no
			// pod: replicas 0).
			{Config: poolOnly(env, `{ app = "llama" }`, `{ app = "llama", tier = "serving" }`, "#pool", `serving_group = { kind = "Deployment", name = "pool-group" }`),
				PlanOnly: true, ExpectNonEmptyPlan: true},
			plan(acctest.ErrorMatching("target_ports", "between 1 and 65535"), "[8000]", "[0]"),
			plan(acctest.ErrorMatching("target_ports", "70000"), "[8000]", "[8000, 70000]"),
			plan(acctest.ErrorMatching("target_ports", "duplicate"), "[8000]", "[8000, 8000]"),
			plan(acctest.ErrorMatching("failure_mode", "FailOpen", "FailClose"), "#pool", `failure_mode = "FailSometimes"`),
			plan(acctest.ErrorMatching("app_protocol", "kubernetes.io/h2c"), "#pool", `app_protocol = "grpc"`),
			plan(acctest.ErrorMatching("Unknown picker flag", "picker_args[0]", `"--scorers" is not a flag of the endpoint picker v1.6.0`, "--health-checking"),
				"#pool", `picker_args = ["--scorers=kv-cache,queue-depth"]`),
			plan(acctest.ErrorMatching("Picker flag set by the resource", "picker_args[1]", "--pool-name is set by the resource (name)"), "#pool", `picker_args = ["--zap-encoder=json", "--pool-name=other"]`),
			plan(acctest.ErrorMatching("Picker flag set by the resource", "picker_args[0]", "--endpoint-target-ports", "parses this flag but does not use it"), "#pool", `picker_args = ["--endpoint-target-ports=8000"]`),
			plan(acctest.ErrorMatching("Invalid picker flag", "picker_args[0]", "write each flag as --flag=value"), "#pool", `picker_args = ["-v=2"]`),
			plan(acctest.ErrorMatching("Picker port taken", "picker_port", "9003 is the picker's gRPC health port"), "#pool", `picker_port = 9003`),
			plan(acctest.ErrorMatching("picker_log_level", "between 1 and 10"), "#pool", `picker_log_level = 0`),
			plan(acctest.ErrorMatching("Set by the resource", "picker_template.containers[0].image", "comes from the picker_* attributes"),
				"#pool", `picker_template = { containers = [{ name = "epp", image = "my/epp:1" }] }`),
			plan(acctest.ErrorMatching("Set by the resource", "picker_template.service_account_name", "runs as its own ServiceAccount"),
				"#pool", `picker_template = { service_account_name = "default" }`),
			plan(acctest.ErrorMatching("Name too long for the picker's Service", "name", "must be a DNS label"), `name         = "bad"`, `name = "`+strings.Repeat("a", 60)+`"`),
		},
	})
	for _, o := range []acctest.Object{inferencePoolObject("default", "bad"), deploymentObject("default", "bad-epp"), serviceObject("default", "bad-epp")} {
		if obj, err := o.Get(env); err != nil || obj != nil {
			t.Errorf("a refused plan left %s in the cluster (err %v)", o.Name, err)
		}
	}
}

// The resource's example (examples/resources/aiplatform_inference_pool)
// with the model deployment it fronts (aiplatform_model_deployment's
// example): applied, the picker Ready, an empty plan, import.
func TestAccInferencePoolExample(t *testing.T) {
	env := acctest.Env(t)
	model := acctest.ResourceExample(t, "aiplatform_model_deployment")
	ex := acctest.ResourceExample(t, "aiplatform_inference_pool")
	cfg := acctest.Provider(env) + model.Config + ex.Config
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					inferencePoolObject("default", "llama-8b").Equal(env, "FailClose", "spec", "endpointPickerRef", "failureMode"),
					deploymentObject("default", "llama-8b-epp").Equal(env, int64(1), "status", "availableReplicas"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{Config: cfg, ResourceName: ex.Address, ImportState: true, ImportStateId: ex.ImportID, ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"timeouts", "serving_group"}},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(inferencePoolObject("default", "llama-8b").Gone(env), deploymentObject("default", "llama-8b-epp").Gone(env)),
	})
}

// A pool and its serving group planned in the same run, on a cluster that
// has neither: the selector is checked against the group's pod labels as
// planned. With a reference (the group is planned first) and with the
// group's name written out (Terraform plans the two in any order; whichever
// is planned second refuses). Nothing is created.
func TestAccInferencePoolSelectorVsPlannedGroup(t *testing.T) {
	env := acctest.Env(t)
	config := func(groupName string) string {
		return acctest.Provider(env) + `
resource "aiplatform_lws_group" "planned" {
  name      = "planned-lws"
  namespace = "default"
  worker = {
    image   = "lmsysorg/sglang:v0.4.6"
    command = ["python3", "-m", "sglang.launch_server"]
    labels  = { app = "sglang" }
  }
}

resource "aiplatform_inference_pool" "p" {
  name          = "planned-pool"
  namespace     = "default"
  selector      = { app = "vllm" }
  target_ports  = [8000]
  serving_group = { kind = "LeaderWorkerSet", name = ` + groupName + ` }
}
`
	}
	want := acctest.ErrorMatching("Selector does not match the serving group", "would select no pod of LeaderWorkerSet default/planned-lws",
		`app is "sglang" on the pods, "vllm" in the selector`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{Config: config("aiplatform_lws_group.planned.name"), ExpectError: want},
			{Config: config(`"planned-lws"`), ExpectError: want},
			{Config: acctest.Provider(env), Check: resource.ComposeTestCheckFunc(
				lwsObject("default", "planned-lws").Gone(env), deploymentObject("default", "planned-pool-epp").Gone(env))},
		},
	})
}
