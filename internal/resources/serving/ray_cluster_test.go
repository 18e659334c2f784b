package serving_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// The Ray cluster tests run against the real KubeRay operator (the package's
// TestMain installs its chart through testenv.Options.Controllers) on fake kwok nodes of
// their own: a pool of four 4-GPU L40S nodes, also labelled raypool=gpu4,
// added once (the examples select it by product).

const (
	rayPoolLabel = "raypool"
	rayPool      = "gpu4"
	rayPoolGPUs  = 4
)

var rayNodesOnce sync.Once

// rayNodes adds the test's GPU pool (4 nodes × 4 GPUs) once per package run.
func rayNodes(t *testing.T, env *testenv.Env) {
	t.Helper()
	var err error
	rayNodesOnce.Do(func() {
		_, err = env.AddNodes(context.Background(), testenv.NodePool{
			Name: "ray-l40s", Count: 4, GPUs: rayPoolGPUs, Product: "NVIDIA-L40S",
			Labels: map[string]string{rayPoolLabel: rayPool},
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

func rayCluster(namespace, name string) acctest.Object {
	return acctest.Object{GVR: schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}, Namespace: namespace, Name: name}
}

// rayPods lists the cluster's pods of one node type (head or worker).
func rayPods(env *testenv.Env, namespace, cluster, nodeType string) ([]corev1.Pod, error) {
	list, err := env.Client.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: fmt.Sprintf("ray.io/cluster=%s,ray.io/node-type=%s", cluster, nodeType),
	})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// podsHave checks the live pods of a node type: their count and, for each,
// GPUs, a toleration, a node selector entry and the queue label.
type podWant struct {
	count      int
	gpus       int64
	toleration string // key tolerated, "" for none expected
	selector   string // key=value, "" for none expected
	queue      string
	mount      string // mountPath of the model cache, "" for none expected
}

func podsHave(env *testenv.Env, namespace, cluster, nodeType string, want podWant) resource.TestCheckFunc {
	return func(*terraform.State) error {
		pods, err := rayPods(env, namespace, cluster, nodeType)
		if err != nil {
			return err
		}
		if len(pods) != want.count {
			return fmt.Errorf("%d %s pods of RayCluster %s, want %d", len(pods), nodeType, cluster, want.count)
		}
		for _, p := range pods {
			c := p.Spec.Containers[0]
			if q := c.Resources.Limits[corev1.ResourceName(testenv.GPUResource)]; q.Value() != want.gpus {
				return fmt.Errorf("pod %s: %d GPUs, want %d", p.Name, q.Value(), want.gpus)
			}
			if want.toleration != "" && !hasToleration(p.Spec.Tolerations, want.toleration) {
				return fmt.Errorf("pod %s: no toleration of %s in %v", p.Name, want.toleration, p.Spec.Tolerations)
			}
			if want.selector != "" {
				k, v, _ := strings.Cut(want.selector, "=")
				if p.Spec.NodeSelector[k] != v {
					return fmt.Errorf("pod %s: nodeSelector %v, want %s", p.Name, p.Spec.NodeSelector, want.selector)
				}
			}
			if got := p.Labels["kueue.x-k8s.io/queue-name"]; got != want.queue {
				return fmt.Errorf("pod %s: queue label %q, want %q", p.Name, got, want.queue)
			}
			if want.mount != "" {
				ok := false
				for _, m := range c.VolumeMounts {
					ok = ok || (m.MountPath == want.mount && m.ReadOnly)
				}
				if !ok {
					return fmt.Errorf("pod %s: no read-only mount at %s in %v", p.Name, want.mount, c.VolumeMounts)
				}
			}
		}
		return nil
	}
}

func hasToleration(ts []corev1.Toleration, key string) bool {
	for _, t := range ts {
		if t.Key == key {
			return true
		}
	}
	return false
}

// noPods checks that the cluster has no pods at all.
func noPods(env *testenv.Env, namespace, cluster string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, nt := range []string{"head", "worker"} {
			pods, err := rayPods(env, namespace, cluster, nt)
			if err != nil {
				return err
			}
			if len(pods) > 0 {
				return fmt.Errorf("RayCluster %s has %d %s pods, want none", cluster, len(pods), nt)
			}
		}
		return nil
	}
}

// claim creates a bound-able PersistentVolumeClaim the model cache mount uses.
func claim(t *testing.T, env *testenv.Env, namespace, name string) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: apiresource.MustParse("1Gi")}},
		},
	}
	// An earlier test's claim may still be terminating (its pods were being
	// deleted): wait until it is gone, or the new pods would mount nothing.
	claims := env.Client.CoreV1().PersistentVolumeClaims(namespace)
	eventually(t, "claim "+name+" from an earlier test to go", func() (bool, string) {
		old, err := claims.Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && old.DeletionTimestamp == nil) {
			return true, ""
		}
		return false, fmt.Sprintf("%v %v", err, old.GetDeletionTimestamp())
	})
	_, err := claims.Create(context.Background(), pvc, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.CoreV1().PersistentVolumeClaims(namespace).Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

func rayClusterConfig(env *testenv.Env, replicas int, extra string) string {
	return acctest.Provider(env) + fmt.Sprintf(`
resource "aiplatform_ray_cluster" "train" {
  name        = "train"
  namespace   = "default"
  ray_version = "2.46.0"
  head = {
    cpu              = "1"
    memory           = "2Gi"
    ray_start_params = { dashboard-host = "0.0.0.0" }
  }
  worker_groups = [{
    name          = "gpu"
    replicas      = %d
    min_replicas  = 1
    max_replicas  = 4
    cpu           = "4"
    memory        = "16Gi"
    gpus          = 4
    node_selector = { %s = %q }
    tolerations   = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  }]
  model_cache = {
    claim_name = "llama-cache"
    sub_path   = "meta-llama/Llama-3.1-8B/main"
    mount_path = "/models"
  }
%s
}
`, replicas, rayPoolLabel, rayPool, extra)
}

// A RayCluster judged by the real KubeRay operator: a head and two 4-GPU
// workers pinned to the pool with its toleration and the model cache
// mounted read-only; create waits until KubeRay says ready; empty plan;
// scaling the group; import.
func TestAccRayCluster(t *testing.T) {
	env := acctest.Env(t)
	rayNodes(t, env)
	claim(t, env, "default", "llama-cache")
	addr := "aiplatform_ray_cluster.train"
	rc := rayCluster("default", "train")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: rayClusterConfig(env, 2, ""),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "default/train"),
					resource.TestCheckResourceAttr(addr, "head_service_name", "train-head-svc"),
					resource.TestCheckResourceAttr(addr, "dashboard_address", "train-head-svc.default.svc:8265"),
					resource.TestCheckResourceAttr(addr, "client_address", "ray://train-head-svc.default.svc:10001"),
					resource.TestCheckResourceAttr(addr, "ready_workers", "2"),
					rc.Equal(env, "ready", "status", "state"),
					rc.Equal(env, "rayproject/ray:2.46.0", "spec", "headGroupSpec", "template", "spec", "containers", "0", "image"),
					rc.Equal(env, 4, "spec", "workerGroupSpecs", "0", "maxReplicas"),
					podsHave(env, "default", "train", "head", podWant{count: 1, mount: "/models"}),
					podsHave(env, "default", "train", "worker", podWant{count: 2, gpus: 4, toleration: "nvidia.com/gpu",
						selector: rayPoolLabel + "=" + rayPool, mount: "/models"}),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config: rayClusterConfig(env, 3, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "ready_workers", "3"),
					podsHave(env, "default", "train", "worker", podWant{count: 3, gpus: 4, toleration: "nvidia.com/gpu",
						selector: rayPoolLabel + "=" + rayPool, mount: "/models"}),
				),
			},
			{ResourceName: addr, ImportState: true, ImportStateId: "default/train", ImportStateVerify: true},
		},
		CheckDestroy: rc.Gone(env),
	})
}

// Bad input is refused at plan time with the attribute's path, and nothing
// is created: replicas outside their bounds, more GPUs per worker than a node
// of the selected pool has, duplicate group names.
func TestAccRayClusterValidation(t *testing.T) {
	env := acctest.Env(t)
	rayNodes(t, env)
	bad := func(group string) string {
		return acctest.Provider(env) + `
resource "aiplatform_ray_cluster" "bad" {
  name          = "bad"
  namespace     = "default"
  ray_version   = "2.46.0"
  head          = {}
  worker_groups = [` + group + `]
}
`
	}
	pool := fmt.Sprintf("node_selector = { %s = %q }", rayPoolLabel, rayPool)
	badTemplate := `{ name = "w", cpu = "1", template = { containers = [
    { name = "ray-worker", requests = { cpu = "500m" } },
    { name = "sidecar", volume_mounts = [{ name = "logs", mount_path = "/logs" }] },
  ] } }`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: bad(`{ name = "w", replicas = 5, max_replicas = 4 }`), PlanOnly: true,
				ExpectError: acctest.ErrorMatching("worker_groups[0].replicas: replicas = 5 is more than max_replicas = 4."),
			},
			{
				Config: bad(`{ name = "w", replicas = 1, min_replicas = 2 }`), PlanOnly: true,
				ExpectError: acctest.ErrorMatching("worker_groups[0].replicas: replicas = 1 is less than min_replicas = 2."),
			},
			{
				Config: bad(`{ name = "w", gpus = 8, ` + pool + ` }`), PlanOnly: true,
				ExpectError: acctest.ErrorMatching(`worker_groups[0].gpus: each worker of group "w" asks for 8 GPUs, but the 4 nodes matching node_selector {raypool=gpu4} have at most 4 allocatable`),
			},
			{
				Config: bad(`{ name = "w" }, { name = "w" }`), PlanOnly: true,
				ExpectError: acctest.ErrorMatching(`worker_groups[1].name: "w" is also the name of worker_groups[0]`),
			},
			{
				Config: bad(`{ name = "w", tolerations = [{ operator = "Equal", value = "x" }] }`), PlanOnly: true,
				// The shared toleration check (object.TolerationsAttribute) names the operator, as for a ResourceFlavor.
				ExpectError: acctest.ErrorMatching(`worker_groups[0].tolerations[0].operator: A toleration without key matches every taint and needs operator = "Exists"`),
			},
			{
				Config: strings.Replace(bad(`{ name = "w" }`), "  head ", "  model_cache = { sub_path = \"m/main\", mount_path = \"models\" }\n  head ", 1), PlanOnly: true,
				ExpectError: acctest.ErrorMatching("model_cache.claim_name: mode pvc mounts the cache's claim; give claim_name."),
			},
			{
				Config: strings.Replace(bad(`{ name = "w" }`), "  head ", "  autoscaling = { enabled = true, idle_timeout = \"1.5s\" }\n  head ", 1), PlanOnly: true,
				ExpectError: acctest.ErrorMatching(`autoscaling.idle_timeout: "1.5s" is not a whole, non-negative number of seconds`),
			},
			// The template's checks: a sidecar needs an image, a field is
			// set in one place, mounts name the pod's volumes.
			{
				Config: bad(badTemplate), PlanOnly: true,
				ExpectError: acctest.ErrorMatching(`worker_groups[0].template.containers[1].image: container "sidecar" needs an image`),
			},
			{
				Config: bad(badTemplate), PlanOnly: true,
				ExpectError: acctest.ErrorMatching(`worker_groups[0].template.containers[0].requests["cpu"] sets what worker_groups[0].cpu sets too`),
			},
			{
				Config: bad(badTemplate), PlanOnly: true,
				ExpectError: acctest.ErrorMatching(`worker_groups[0].template.containers[1].volume_mounts[0].name: no volume named "logs"`),
			},
		},
		CheckDestroy: rayCluster("default", "bad").Gone(env),
	})
}

// kueueJudgesRay reports whether the test cluster's Kueue manager has the
// ray.io/raycluster integration, as its configuration (the chart's
// kueue-manager-config ConfigMap) says: the chart registers every
// integration's webhook whatever is enabled, so the webhooks do not tell.
func kueueJudgesRay(env *testenv.Env) bool {
	cm, err := env.Client.CoreV1().ConfigMaps("kueue-system").Get(context.Background(), "kueue-manager-config", metav1.GetOptions{})
	if err != nil {
		return false
	}
	cfg, err := helm.ParseKueueManagerConfig(cm.Data["controller_manager_config.yaml"])
	return err == nil && slices.Contains(cfg.Frameworks, "ray.io/raycluster")
}

// With queue_name, the real Kueue manager judges the RayCluster as a whole: a
// cluster that fits its queue's quota (4 GPUs) is admitted and gets pods
// carrying the queue label; one that does not fit (8 GPUs) is held suspended
// with no pods. Neither apply waits for readiness, and the plan stays empty
// although Kueue owns spec.suspend.
func TestAccRayClusterQueued(t *testing.T) {
	env := acctest.Env(t)
	if !kueueJudgesRay(env) {
		t.Skip("the test cluster's Kueue manager runs without the ray.io/raycluster integration (testenv.Kueue(frameworks...) in TestMain)")
	}
	rayNodes(t, env)
	cluster := func(name string, replicas int) string {
		return fmt.Sprintf(`
resource "aiplatform_ray_cluster" %[1]q {
  name        = %[1]q
  namespace   = "default"
  ray_version = "2.46.0"
  queue_name  = aiplatform_local_queue.ray.name
  head        = { cpu = "1", memory = "1Gi" }
  worker_groups = [{
    name          = "gpu"
    replicas      = %[2]d
    min_replicas  = %[2]d
    max_replicas  = %[2]d
    gpus          = 4
    cpu           = "1"
    memory        = "1Gi"
    node_selector = { %[3]s = %[4]q }
  }]
}
`, name, replicas, rayPoolLabel, rayPool)
	}
	cfg := acctest.Provider(env) + fmt.Sprintf(`
resource "aiplatform_resource_flavor" "ray" {
  name        = "ray-gpu4"
  node_labels = { %s = %q }
}
resource "aiplatform_cluster_queue" "ray" {
  name = "ray"
  resource_groups = [{
    covered_resources = ["cpu", "memory", "nvidia.com/gpu"]
    flavors = [{
      name = aiplatform_resource_flavor.ray.name
      resources = [
        { name = "cpu", nominal_quota = "16" },
        { name = "memory", nominal_quota = "64Gi" },
        { name = "nvidia.com/gpu", nominal_quota = "4" },
      ]
    }]
  }]
}
resource "aiplatform_local_queue" "ray" {
  name          = "ray"
  namespace     = "default"
  cluster_queue = aiplatform_cluster_queue.ray.name
}
`, rayPoolLabel, rayPool) + cluster("fits", 1) + cluster("toobig", 2)
	fits, toobig := rayCluster("default", "fits"), rayCluster("default", "toobig")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					fits.Equal(env, "ray", "metadata", "labels", "kueue.x-k8s.io/queue-name"),
					toobig.Equal(env, true, "spec", "suspend"),
					noPods(env, "default", "toobig"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// Kueue admits the one that fits and KubeRay creates its
				// pods; the one that does not fit stays held. Kueue's edits
				// (spec.suspend, the flavor's node labels) are no diff.
				PreConfig: func() {
					eventually(t, "RayCluster fits admitted, its 2 pods created", allPods(env, "default", "fits", 2))
				},
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					fits.Equal(env, false, "spec", "suspend"),
					podsHave(env, "default", "fits", "head", podWant{count: 1, queue: "ray"}),
					podsHave(env, "default", "fits", "worker", podWant{count: 1, gpus: 4, selector: rayPoolLabel + "=" + rayPool, queue: "ray"}),
					toobig.Equal(env, true, "spec", "suspend"),
					noPods(env, "default", "toobig"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
			{
				ResourceName: "aiplatform_ray_cluster.toobig", ImportState: true, ImportStateId: "default/toobig", ImportStateVerify: true,
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(fits.Gone(env), toobig.Gone(env)),
	})
}

// allPods reports whether the cluster has n pods, head included.
func allPods(env *testenv.Env, namespace, cluster string, n int) func() (bool, string) {
	return func() (bool, string) {
		head, err1 := rayPods(env, namespace, cluster, "head")
		workers, err2 := rayPods(env, namespace, cluster, "worker")
		if err1 != nil || err2 != nil {
			return false, fmt.Sprint(err1, err2)
		}
		return len(head)+len(workers) == n, fmt.Sprintf("%d head, %d worker pods", len(head), len(workers))
	}
}

// eventually polls cond until it holds; the bound only ends a test whose
// controllers never act.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: not reached (last: %s)", what, last)
}

// The examples: examples/resources/aiplatform_ray_cluster (apply, empty plan,
// import with the ID of its import.sh) and the examples/ray scenario through
// the terraform CLI, judged by Kueue: the cluster is admitted, its pods run.
func TestAccRayClusterExamples(t *testing.T) {
	env := acctest.Env(t)
	rayNodes(t, env)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("resource", func(t *testing.T) {
		ex := acctest.ResourceExample(t, "aiplatform_ray_cluster")
		cfg := acctest.Provider(env) + ex.Config
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: acctest.Factories,
			Steps: []resource.TestStep{
				{
					Config: cfg,
					Check: resource.ComposeAggregateTestCheckFunc(
						rayCluster("default", "tune").Equal(env, "ready", "status", "state"),
						podsHave(env, "default", "tune", "worker", podWant{count: 1, gpus: 4, toleration: "nvidia.com/gpu",
							selector: "nvidia.com/gpu.product=NVIDIA-L40S"}),
					),
					ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				},
				{Config: cfg, ResourceName: ex.Address, ImportState: true, ImportStateId: ex.ImportID, ImportStateVerify: true},
			},
			CheckDestroy: rayCluster("default", "tune").Gone(env),
		})
	})
	t.Run("ray", func(t *testing.T) {
		if !kueueJudgesRay(env) {
			t.Skip("the test cluster's Kueue manager runs without the ray.io/raycluster integration (testenv.Kueue(frameworks...) in TestMain)")
		}
		w := acctest.NewWorkspace(t, env, filepath.Join(root, "examples", "ray"))
		if out, err := w.Run("apply", "-auto-approve"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		eventually(t, "RayCluster train admitted by Kueue, head and 2 workers created", allPods(env, "default", "train", 3))
		if err := podsHave(env, "default", "train", "worker", podWant{count: 2, gpus: 4, selector: "nvidia.com/gpu.product=NVIDIA-L40S", queue: "ray"})(nil); err != nil {
			t.Fatal(err)
		}
		if code, out := w.PlanExitCode(); code != 0 {
			t.Fatalf("plan -detailed-exitcode after Kueue admitted the cluster exited %d, want 0:\n%s", code, out)
		}
	})
}

// rayAutoscaledConfig is rayClusterConfig's cluster with KubeRay's autoscaler
// on and no replicas: the group starts at min_replicas.
func rayAutoscaledConfig(env *testenv.Env, idle string) string {
	return strings.Replace(rayClusterConfig(env, 0, fmt.Sprintf("  autoscaling = { enabled = true, idle_timeout = %q }\n", idle)),
		"    replicas      = 0\n", "", 1)
}

// With autoscaling on, the autoscaler owns each group's replicas: after it
// scales a group (an update by another field manager, as KubeRay's autoscaler
// does), the next apply of an unrelated change neither conflicts with it nor
// puts the old count back, and the plan stays empty.
func TestAccRayClusterAutoscalerOwnsReplicas(t *testing.T) {
	env := acctest.Env(t)
	rayNodes(t, env)
	claim(t, env, "default", "llama-cache")
	addr := "aiplatform_ray_cluster.train"
	rc := rayCluster("default", "train")
	replicas := func(o map[string]any) map[string]any {
		return o["spec"].(map[string]any)["workerGroupSpecs"].([]any)[0].(map[string]any)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: rayAutoscaledConfig(env, "5m"),
				Check: resource.ComposeAggregateTestCheckFunc(
					rc.Equal(env, true, "spec", "enableInTreeAutoscaling"),
					rc.Equal(env, 1, "spec", "workerGroupSpecs", "0", "minReplicas"),
					podsHave(env, "default", "train", "worker", podWant{count: 1, gpus: 4, toleration: "nvidia.com/gpu",
						selector: rayPoolLabel + "=" + rayPool, mount: "/models"}),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				PreConfig: func() {
					rc.Edit(t, env, "ray-autoscaler", func(o map[string]any) { replicas(o)["replicas"] = int64(3) })
				},
				Config: rayAutoscaledConfig(env, "10m"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					rc.Equal(env, 3, "spec", "workerGroupSpecs", "0", "replicas"),
					rc.Equal(env, 600, "spec", "autoscalerOptions", "idleTimeoutSeconds"),
				),
			},
			// A changed count shows in the plan (the configuration changed) but
			// is only an initial count: the autoscaler's 3 stays.
			{
				Config:           strings.Replace(rayAutoscaledConfig(env, "10m"), `    min_replicas  = 1`, "    replicas      = 2\n    min_replicas  = 1", 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check:            rc.Equal(env, 3, "spec", "workerGroupSpecs", "0", "replicas"),
			},
			// Import reads the autoscaler's count (3) where state had the
			// configured one (TestAccRayClusterAutoscaledImport: no plan after).
			{
				ResourceName: addr, ImportState: true, ImportStateId: "default/train", ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"worker_groups.0.replicas"},
			},
		},
		CheckDestroy: rc.Gone(env),
	})
}

// An autoscaled cluster imported into a fresh state (the autoscaler has it at
// 3 workers) plans no change with a configuration that leaves replicas unset:
// the default initial count does not fight the autoscaler's.
func TestAccRayClusterAutoscaledImport(t *testing.T) {
	env := acctest.Env(t)
	rayNodes(t, env)
	claim(t, env, "default", "llama-cache")
	dir := t.TempDir()
	cfg := strings.Replace(rayAutoscaledConfig(env, "5m"), acctest.Provider(env), "", 1)
	main := acctest.RequiredProviders + `
variable "kubeconfig" { type = string }
provider "aiplatform" { config_path = var.kubeconfig }
` + cfg
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	w := acctest.NewWorkspace(t, env, dir)
	if out, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatal(out, err)
	}
	rayCluster("default", "train").Edit(t, env, "ray-autoscaler", func(o map[string]any) {
		o["spec"].(map[string]any)["workerGroupSpecs"].([]any)[0].(map[string]any)["replicas"] = int64(3)
	})
	// A fresh state (as when adopting a cluster someone else created).
	if err := os.Remove(filepath.Join(w.Dir(), "terraform.tfstate")); err != nil {
		t.Fatal(err)
	}
	if out, err := w.Run("import", "aiplatform_ray_cluster.train", "default/train"); err != nil {
		t.Fatal(out, err)
	}
	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan after import: exit code %d, want 0 (no changes)\n%s", code, out)
	}
	live, err := rayCluster("default", "train").Get(env)
	if err != nil {
		t.Fatal(err)
	}
	if r := live.Object["spec"].(map[string]any)["workerGroupSpecs"].([]any)[0].(map[string]any)["replicas"]; fmt.Sprint(r) != "3" {
		t.Errorf("replicas after import and plan: %v, want the autoscaler's 3", r)
	}
}
