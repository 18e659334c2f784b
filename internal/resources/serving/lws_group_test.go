package serving_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

const lwsPoolLabel = "lwspool"

func lwsObject(namespace, name string) acctest.Object {
	return acctest.Object{GVR: schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"},
		Namespace: namespace, Name: name}
}

// lwsConfig is a group of a leader and size − 1 workers on the H100 pool
// serving 70B parameters in bf16 (140 GB), with extra attributes.
func lwsConfig(env *testenv.Env, name string, replicas, size, gpus int, serving, extra string) string {
	return acctest.Provider(env) + fmt.Sprintf(`
resource "aiplatform_lws_group" "g" {
  name      = %[1]q
  namespace = "default"
  replicas  = %[2]d
  size      = %[3]d
  leader = {
    image         = "vllm/vllm-openai:v0.9.0"
    args          = ["--model", "/models/llama", "--tensor-parallel-size", "8"]
    env           = { HF_HUB_OFFLINE = "1" }
    gpus          = %[4]d
    cpu           = "8"
    memory        = "64Gi"
    node_selector = { %[5]s = "h100" }
    tolerations   = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  }
  worker = {
    image         = "vllm/vllm-openai:v0.9.0"
    command       = ["ray", "start", "--block"]
    gpus          = %[4]d
    cpu           = "8"
    memory        = "64Gi"
    node_selector = { %[5]s = "h100" }
    tolerations   = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  }
  model_cache = {
    mode       = "node_local"
    host_path  = "/var/lib/model-cache/default/llama"
    sub_path   = "main-0123abcd"
    mount_path = "/models/llama"
  }
  serving = {
    params_billion = 70
    dtype          = "bf16"
    %[6]s
  }
  %[7]s
}
`, name, replicas, size, gpus, lwsPoolLabel, serving, extra)
}

// lwsWorkerConfig is a group named bad whose worker template is worker.
func lwsWorkerConfig(env *testenv.Env, worker string) string {
	return acctest.Provider(env) + fmt.Sprintf(`
resource "aiplatform_lws_group" "g" {
  name      = "bad"
  namespace = "default"
  worker = {
    %s
  }
}
`, worker)
}

// lwsGroupPods lists the LeaderWorkerSet's live pods by role.
func lwsGroupPods(env *testenv.Env, namespace, name string) (leaders, workers []corev1.Pod, err error) {
	list, err := env.Client.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: "leaderworkerset.sigs.k8s.io/name=" + name,
	})
	if err != nil {
		return nil, nil, err
	}
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Labels["leaderworkerset.sigs.k8s.io/worker-index"] == "0" {
			leaders = append(leaders, p)
		} else {
			workers = append(workers, p)
		}
	}
	return leaders, workers, nil
}

// lwsEventually retries check until it passes: the LWS controller creates the
// pods after the apply returns. The deadline only bounds a broken run.
func lwsEventually(check resource.TestCheckFunc) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		deadline := time.Now().Add(3 * time.Minute)
		for {
			err := check(s)
			if err == nil || time.Now().After(deadline) {
				return err
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
}

// lwsGroupHas checks the pods the LWS controller made: leaders and workers per
// group, group labels, GPUs, the cache mount, and the leader's probes: the
// startup probe, a liveness probe on the server's own /health with no
// initial delay (Kubernetes holds it until startup passes), a separate
// readiness probe on /v1/models; none on the workers.
func lwsGroupHas(env *testenv.Env, name string, groups, size int, gpus int64, threshold int32) resource.TestCheckFunc {
	return lwsEventually(func(*terraform.State) error {
		leaders, workers, err := lwsGroupPods(env, "default", name)
		if err != nil {
			return err
		}
		if len(leaders) != groups || len(workers) != groups*(size-1) {
			return fmt.Errorf("%d leader and %d worker pods, want %d and %d", len(leaders), len(workers), groups, groups*(size-1))
		}
		for _, p := range append(leaders, workers...) {
			for _, l := range []string{"leaderworkerset.sigs.k8s.io/group-index", "leaderworkerset.sigs.k8s.io/group-key"} {
				if p.Labels[l] == "" {
					return fmt.Errorf("pod %s: no label %s in %v", p.Name, l, p.Labels)
				}
			}
			c := p.Spec.Containers[0]
			if q := c.Resources.Limits[corev1.ResourceName(testenv.GPUResource)]; q.Value() != gpus {
				return fmt.Errorf("pod %s: %d GPUs, want %d", p.Name, q.Value(), gpus)
			}
			if len(c.VolumeMounts) == 0 || c.VolumeMounts[0].MountPath != "/models/llama" || !c.VolumeMounts[0].ReadOnly {
				return fmt.Errorf("pod %s: mounts %v, want /models/llama read-only", p.Name, c.VolumeMounts)
			}
		}
		for _, p := range leaders {
			sp := p.Spec.Containers[0].StartupProbe
			if sp == nil || sp.HTTPGet == nil || sp.HTTPGet.Path != "/health" || sp.FailureThreshold != threshold || sp.PeriodSeconds != 10 {
				return fmt.Errorf("leader %s: startup probe %+v, want GET /health with failureThreshold %d every 10 s", p.Name, sp, threshold)
			}
			lp := p.Spec.Containers[0].LivenessProbe
			if lp == nil || lp.HTTPGet == nil || lp.HTTPGet.Path != "/health" || lp.HTTPGet.Port.IntValue() != 8000 || lp.InitialDelaySeconds != 0 ||
				lp.PeriodSeconds != 10 || lp.FailureThreshold != 3 {
				return fmt.Errorf("leader %s: liveness probe %+v, want GET /health:8000 every 10 s, 3 failures, no initial delay", p.Name, lp)
			}
			rp := p.Spec.Containers[0].ReadinessProbe
			if rp == nil || rp.HTTPGet == nil || rp.HTTPGet.Path != "/v1/models" || rp.PeriodSeconds != 5 {
				return fmt.Errorf("leader %s: readiness probe %+v, want GET /v1/models every 5 s", p.Name, rp)
			}
		}
		for _, p := range workers {
			if c := p.Spec.Containers[0]; c.StartupProbe != nil || c.LivenessProbe != nil || c.ReadinessProbe != nil {
				return fmt.Errorf("worker %s has probes: %+v, %+v, %+v", p.Name, c.StartupProbe, c.LivenessProbe, c.ReadinessProbe)
			}
		}
		return nil
	})
}

// A LeaderWorkerSet judged by the real LWS controller: replicas = 2, size = 2
// gives 2 leaders and 2 workers with the group labels, 4 GPUs each and a
// startup probe on the leaders sized to read 140 GB from node-local disk:
// ⌈(140e9 B ÷ 1 GiB/s + 60 s) × 2 ÷ 10 s⌉ = 39. gpu_memory comes from the
// pool's nvidia.com/gpu.memory label (81559 MiB); 8 GPUs of 76.97 GB usable,
// less 17.5 GB of weights and 1 GiB of overhead each, hold
// ⌊(76,968,728,985 − 17.5e9 − 2^30) × 8 ÷ 2^30⌋ = 435 requests of 1 GiB per
// group, 870 for two. Then: empty plan, scaling, import.
func TestAccLWSGroup(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_lws_group.g"
	live := lwsObject("default", "llama")
	serving := `kv_cache_bytes_per_request = 1073741824`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: lwsConfig(env, "llama", 2, 2, 4, serving, `queue_name = "serving"`),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "default/llama"),
					resource.TestCheckResourceAttr(addr, "serving.gpu_memory", "81559Mi"),
					resource.TestCheckResourceAttr(addr, "serving.tensor_parallel", "8"),
					resource.TestCheckResourceAttr(addr, "gpus_total", "16"),
					resource.TestCheckResourceAttr(addr, "max_concurrency", "870"),
					live.Equal(env, 2, "spec", "replicas"),
					live.Equal(env, 2, "spec", "leaderWorkerTemplate", "size"),
					live.Equal(env, "serving", "metadata", "labels", "kueue.x-k8s.io/queue-name"),
					live.Equal(env, "RecreateGroupOnPodRestart", "spec", "leaderWorkerTemplate", "restartPolicy"),
					lwsGroupHas(env, "llama", 2, 2, 4, 39),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// One group of three pods with 2 GPUs each: tensor parallel 6
				// of 76.97 GB holds 140 GB (6 is valid: no heads are given,
				// and e.g. 48 attention and 6 KV heads would allow it); the
				// plan updates in place.
				Config: lwsConfig(env, "llama", 1, 3, 2, serving, `startup_policy = "LeaderReady"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "serving.tensor_parallel", "6"),
					resource.TestCheckResourceAttr(addr, "gpus_total", "6"),
					live.Equal(env, "LeaderReady", "spec", "startupPolicy"),
					live.Equal(env, nil, "metadata", "labels", "kueue.x-k8s.io/queue-name"),
				),
			},
			{
				// Scaled to zero by choice (the plan warns with the cold
				// start): no pods, nothing held; an import reads
				// allow_scale_to_zero = true from the empty group.
				Config: lwsConfig(env, "llama", 0, 3, 2, serving, `allow_scale_to_zero = true`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "gpus_total", "0"),
					resource.TestCheckResourceAttr(addr, "max_concurrency", "0"),
					resource.TestCheckResourceAttr(addr, "allow_scale_to_zero", "true"),
					live.Equal(env, 0, "spec", "replicas"),
					lwsGroupHas(env, "llama", 0, 3, 2, 39),
				),
			},
			{ResourceName: addr, ImportState: true, ImportStateVerify: true, ImportStateId: "default/llama"},
			{ResourceName: addr, ImportState: true, ImportStateId: "llama", ExpectError: regexp.MustCompile(`expected "namespace/name"`)},
		},
		CheckDestroy: live.Gone(env),
	})
}

// A serving group without a leader block (issue #28): the leader runs the
// worker template with the model server's startup, liveness and readiness
// probes; the workers — a Ray or vLLM worker serves no HTTP — get none. On
// the live LeaderWorkerSet: a leader template with the probes, a worker
// template without any; on the pods the controller makes: the same. Then an
// empty plan (the object reads back as no leader block) and an import.
func TestAccLWSGroupWithoutLeader(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_lws_group.g"
	live := lwsObject("default", "noleader")
	config := acctest.Provider(env) + fmt.Sprintf(`
resource "aiplatform_lws_group" "g" {
  name      = "noleader"
  namespace = "default"
  replicas  = 1
  size      = 2
  worker = {
    image         = "vllm/vllm-openai:v0.9.0"
    command       = ["sh", "-c", "ray start --address=$(LWS_LEADER_ADDRESS):6379 --block"]
    gpus          = 4
    node_selector = { %[1]s = "h100" }
    tolerations   = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  }
  model_cache = {
    mode       = "node_local"
    host_path  = "/var/lib/model-cache/default/llama"
    sub_path   = "main-0123abcd"
    mount_path = "/models/llama"
  }
  serving = {
    params_billion = 70
    dtype          = "bf16"
  }
}
`, lwsPoolLabel)
	probes := func(role string, want bool) resource.TestCheckFunc {
		return live.Check(env, func(obj map[string]any) error {
			tmpl, _ := obj["spec"].(map[string]any)["leaderWorkerTemplate"].(map[string]any)[role].(map[string]any)
			spec, _ := tmpl["spec"].(map[string]any)
			containers, _ := spec["containers"].([]any)
			if len(containers) != 1 {
				return fmt.Errorf("%s: containers %v", role, containers)
			}
			c, _ := containers[0].(map[string]any)
			for _, f := range []string{"startupProbe", "livenessProbe", "readinessProbe"} {
				if (c[f] != nil) != want {
					return fmt.Errorf("%s: %s = %v, want present %v", role, f, c[f], want)
				}
			}
			return nil
		})
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config:           config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckNoResourceAttr(addr, "leader"),
					probes("workerTemplate", false),
					probes("leaderTemplate", true),
					live.Equal(env, "/health", "spec", "leaderWorkerTemplate", "leaderTemplate", "spec", "containers", "0", "livenessProbe", "httpGet", "path"),
					live.Equal(env, "/v1/models", "spec", "leaderWorkerTemplate", "leaderTemplate", "spec", "containers", "0", "readinessProbe", "httpGet", "path"),
					// ⌈(140e9 B ÷ 1 GiB/s + 60 s) × 2 ÷ 10 s⌉ = 39 (node-local cache).
					lwsGroupHas(env, "noleader", 1, 2, 4, 39),
				),
			},
			{ResourceName: addr, ImportState: true, ImportStateVerify: true, ImportStateId: "default/noleader"},
		},
		CheckDestroy: live.Gone(env),
	})
}

// Bad input is refused at plan time with the attribute's path, and nothing
// is created in the cluster.
func TestAccLWSGroupValidation(t *testing.T) {
	env := acctest.Env(t)
	plan := func(config string, want *regexp.Regexp) resource.TestStep {
		return resource.TestStep{Config: config, PlanOnly: true, ExpectError: want}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			// 140 GB ÷ 1 GPU does not fit 72 GB.
			plan(lwsConfig(env, "bad", 1, 2, 4, `gpu_memory = "80G"
    tensor_parallel = 1`, ""),
				acctest.ErrorMatching("serving.tensor_parallel", "weights 140 GB ÷ tensor_parallel 1 = 140 GB + overhead 1.07 GB = 141.07 GB per GPU, but a 80 GB GPU holds 72 GB after the 0.1 reserve; at least 2 GPUs")),
			// The weights fit 2 GPUs, one request's KV cache at the context
			// length does not: 327680 B per token × 8192 tokens = 2.68 GB.
			plan(lwsConfig(env, "bad", 1, 2, 4, `gpu_memory = "80G"
    tensor_parallel = 2
    kv_cache_bytes_per_token = 327680
    context_length = 8192`, ""),
				acctest.ErrorMatching("serving.tensor_parallel", "one replica cannot hold its weights, the KV cache of one request of 8192 tokens and the per-GPU overhead "+
					"(the weights fit, but its maximum concurrency would be 0): weights 140 GB ÷ tensor_parallel 2 = 70 GB + KV cache of one request 2.68 GB ÷ 2 = 1.34 GB + overhead 1.07 GB = 72.42 GB per GPU, but a 80 GB GPU holds 72 GB")),
			// The group's tensor parallel 8 does not divide 28 attention heads.
			plan(lwsConfig(env, "bad", 1, 2, 4, `attention_heads = 28
    kv_heads = 4`, ""),
				acctest.ErrorMatching("serving", "tensor_parallel 8 does not divide the model's 28 attention heads (vLLM and SGLang shard heads evenly); valid values: 1, 2, 4, 28")),
			plan(lwsConfig(env, "bad", 0, 2, 4, "", ""), acctest.ErrorMatching("replicas", "Set allow_scale_to_zero = true")),
			plan(lwsConfig(env, "bad", 1, 2, 4, `health_path = "/health/upstream"`, ""),
				acctest.ErrorMatching("serving.health_path", `"/health/upstream" is a readiness or dependency check`)),
			// The group's 8 GPUs cannot carry tensor parallel 16.
			plan(lwsConfig(env, "bad", 1, 2, 4, `tensor_parallel = 16`, ""),
				acctest.ErrorMatching("serving.tensor_parallel", "tensor_parallel 16 exceeds the 8 GPUs of a group")),
			// The default (every GPU of the group: one) is too few for 140 GB.
			plan(lwsConfig(env, "bad", 1, 1, 1, `gpu_memory = "80G"`, ""),
				acctest.ErrorMatching("serving: one replica cannot hold its weights and the per-GPU overhead: weights 140 GB ÷ tensor_parallel 1 = 140 GB")),
			// 16 GPUs per pod on 8-GPU nodes.
			plan(lwsConfig(env, "bad", 1, 1, 16, "", ""),
				acctest.ErrorMatching("leader.gpus", "each leader pod needs 16 GPUs on one node, but the most any of the 2 nodes matching {lwspool=h100} has is 8")),
			// No gpu.memory label on the pool and no gpu_memory.
			plan(regexp.MustCompile(`"h100"`).ReplaceAllString(lwsConfig(env, "bad", 1, 1, 4, "", ""), `"nolabel"`),
				acctest.ErrorMatching("serving.gpu_memory", "none of the 1 live nodes matching worker.node_selector {lwspool=nolabel} carries the label nvidia.com/gpu.memory")),
			plan(lwsConfig(env, "bad", 1, 2, 4, `gpu_memory = "80 GB"`, ""), acctest.ErrorMatching("serving.gpu_memory", `"80 GB"`)),
			plan(lwsConfig(env, "bad", 1, 2, 4, `reserve_fraction = 1`, ""), acctest.ErrorMatching("serving.reserve_fraction", "less than 1")),
			plan(lwsConfig(env, "bad", 1, 2, 4, `model_bytes = 140000000000`, ""), acctest.ErrorMatching("serving.params_billion", "not both")),
			plan(regexp.MustCompile(`dtype\s+= "bf16"`).ReplaceAllString(lwsConfig(env, "bad", 1, 2, 4, "", ""), `dtype = "fp4"`),
				acctest.ErrorMatching("serving.dtype", "fp4")),
			plan(lwsConfig(env, "bad", 1, 2, 4, "", `restart_policy = "Always"`), acctest.ErrorMatching("restart_policy", "Always")),
			plan(lwsConfig(env, "bad", 1, 2, 4, "", `rollout = { max_surge = "lots" }`), acctest.ErrorMatching("rollout.max_surge", "percentage")),
			// Templates of the shared model: one form, mounts of declared
			// volumes, an overlay that is a PodTemplateSpec.
			plan(lwsWorkerConfig(env, `image = "nginx:1.27"
    containers = [{ name = "nginx", image = "nginx:1.27" }]`),
				acctest.ErrorMatching("worker.containers: set image (the shorthand for a pod of one container) or containers, not both")),
			plan(lwsWorkerConfig(env, `containers = [{ name = "nginx", image = "nginx:1.27", volume_mounts = [{ name = "nope", mount_path = "/x" }] }]`),
				acctest.ErrorMatching(`worker.containers[0].volume_mounts[0].name: no volume named "nope"`)),
			plan(lwsWorkerConfig(env, `containers   = [{ name = "nginx", image = "nginx:1.27" }]
    pod_template = yamlencode({ spec = { hostNetwrk = true } })`),
				acctest.ErrorMatching("worker.pod_template", `unknown field "spec.hostNetwrk"`)),
		},
	})
	if obj, err := lwsObject("default", "bad").Get(env); err != nil || obj != nil {
		t.Errorf("a refused plan left LeaderWorkerSet default/bad in the cluster (err %v)", err)
	}
}

// The examples apply on this package's cluster, whose LWS controller judges
// them (examples/examples_test.go runs none): the resource example (2 pods ×
// 8 GPUs on the H100 pool, empty plan, import by its import.sh), and the
// serving-70b scenario through the terraform CLI (sizing data source feeding
// the group; 4 replicas of one 2-GPU pod; exit code 0 of plan
// -detailed-exitcode after apply).
func TestAccLWSGroupExamples(t *testing.T) {
	env := acctest.Env(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("resource", func(t *testing.T) {
		ex := acctest.ResourceExample(t, "aiplatform_lws_group")
		cfg := acctest.Provider(env) + ex.Config
		addr := ex.Address
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: acctest.Factories,
			Steps: []resource.TestStep{
				{
					Config: cfg,
					Check: resource.ComposeAggregateTestCheckFunc(
						resource.TestCheckResourceAttr(addr, "serving.gpu_memory", "81559Mi"),
						resource.TestCheckResourceAttr(addr, "serving.tensor_parallel", "16"),
						resource.TestCheckResourceAttr(addr, "gpus_total", "16"),
						// (76,968,728,985 − ⌈671e9 ÷ 16⌉ − 2^30) × 16 ÷ 4e9 = 135.8.
						resource.TestCheckResourceAttr(addr, "max_concurrency", "135"),
						lwsEventually(func(*terraform.State) error {
							leaders, workers, err := lwsGroupPods(env, "default", "deepseek-v3")
							if err != nil {
								return err
							}
							if len(leaders) != 1 || len(workers) != 1 {
								return fmt.Errorf("%d leaders, %d workers, want 1 and 1", len(leaders), len(workers))
							}
							if sp := leaders[0].Spec.Containers[0].StartupProbe; sp == nil || sp.FailureThreshold != 652 {
								return fmt.Errorf("leader startup probe %+v, want failureThreshold 652", sp)
							}
							// The production parts: a sidecar beside the server,
							// the token from a Secret, shared memory for NCCL.
							lc := leaders[0].Spec.Containers
							if len(lc) != 2 || lc[0].Name != "vllm" || lc[1].Name != "metrics-exporter" || lc[1].StartupProbe != nil {
								return fmt.Errorf("leader containers %v, want vllm and metrics-exporter", lc)
							}
							var token *corev1.EnvVar
							for i, e := range lc[0].Env {
								if e.Name == "HF_TOKEN" {
									token = &lc[0].Env[i]
								}
							}
							if token == nil || token.ValueFrom == nil || token.ValueFrom.SecretKeyRef == nil || token.ValueFrom.SecretKeyRef.Name != "hf-token" {
								return fmt.Errorf("leader env %v, want HF_TOKEN from the Secret hf-token", lc[0].Env)
							}
							if q := lc[0].Resources.Requests[corev1.ResourceCPU]; q.String() != "32" {
								return fmt.Errorf("leader cpu request %s, want 32 (limit 48)", q.String())
							}
							for _, p := range []corev1.Pod{leaders[0], workers[0]} {
								if v := p.Spec.Volumes; len(v) == 0 || v[0].Name != "dshm" || v[0].EmptyDir == nil || v[0].EmptyDir.Medium != corev1.StorageMediumMemory {
									return fmt.Errorf("pod %s volumes %v, want dshm in memory", p.Name, v)
								}
							}
							return nil
						}),
					),
					ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				},
				{Config: cfg, ResourceName: addr, ImportState: true, ImportStateId: ex.ImportID, ImportStateVerify: true},
			},
			CheckDestroy: lwsObject("default", "deepseek-v3").Gone(env),
		})
	})
	t.Run("serving-70b", func(t *testing.T) {
		w := acctest.NewWorkspace(t, env, filepath.Join(root, "examples", "serving-70b"))
		if out, err := w.Run("apply", "-auto-approve"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		live := lwsObject("default", "llama-70b")
		for _, check := range []resource.TestCheckFunc{
			live.Equal(env, 4, "spec", "replicas"),
			live.Equal(env, 1, "spec", "leaderWorkerTemplate", "size"),
			live.Equal(env, "2", "spec", "leaderWorkerTemplate", "workerTemplate", "spec", "containers", "0", "resources", "limits", "nvidia.com/gpu"),
			// --max-num-seqs: the data source's one request per replica (see
			// the example's comment).
			live.Equal(env, "1", "spec", "leaderWorkerTemplate", "workerTemplate", "spec", "containers", "0", "args", "5"),
			lwsEventually(func(*terraform.State) error {
				leaders, workers, err := lwsGroupPods(env, "default", "llama-70b")
				if err != nil {
					return err
				}
				if len(leaders) != 4 || len(workers) != 0 {
					return fmt.Errorf("%d leaders, %d workers, want 4 and 0", len(leaders), len(workers))
				}
				return nil
			}),
		} {
			if err := check(nil); err != nil {
				t.Fatal(err)
			}
		}
		if code, out := w.PlanExitCode(); code != 0 {
			t.Fatalf("plan -detailed-exitcode after apply exited %d, want 0:\n%s", code, out)
		}
		state, err := os.ReadFile(filepath.Join(w.Dir(), "terraform.tfstate"))
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			Outputs map[string]struct {
				Value map[string]any `json:"value"`
			} `json:"outputs"`
		}
		if err := json.Unmarshal(state, &st); err != nil {
			t.Fatal(err)
		}
		if v := st.Outputs["serving"].Value; fmt.Sprint(v["gpus_total"]) != "8" || fmt.Sprint(v["max_concurrency"]) != "4" || fmt.Sprint(v["replicas_per_node"]) != "4" {
			t.Errorf("output serving = %v, want gpus_total 8, max_concurrency 4, replicas_per_node 4", v)
		}
	})
}
