package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	leaderWorkerSets = LWSGroupVersion.WithResource("leaderworkersets")
	rayClusters      = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}
)

// TestOperators runs the real KubeRay operator, LWS controller and Kueue
// manager (with its RayCluster integration), installed from their charts and
// run by the pod runner, against a cluster of kwok GPU nodes and checks what they make of a LeaderWorkerSet and RayClusters; then
// that Stop leaves none of their processes. Runs only with TF_ACC or
// TESTENV_E2E set.
func TestOperators(t *testing.T) {
	if os.Getenv("TF_ACC") == "" && os.Getenv("TESTENV_E2E") == "" {
		t.Skip("set TF_ACC or TESTENV_E2E to start a cluster")
	}
	if os.Getenv("TESTENV_KUBECONFIG") != "" {
		t.Skip("runs its own operators: not against TESTENV_KUBECONFIG")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	begin := time.Now()
	env, err := Start(ctx, Options{
		Controllers: []Controller{KubeRay(), LWS(), Kueue("batch/job", "ray.io/raycluster")},
		Nodes:       []NodePool{{Name: "gpu", Count: 2, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Start with KubeRay, LWS and Kueue: %s", time.Since(begin))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = env.Stop()
		}
	})
	t.Run("LeaderWorkerSet", func(t *testing.T) {
		k := kueueClient{t: t, ctx: ctx, env: env}
		created := time.Now()
		k.create(leaderWorkerSets, "default", leaderWorkerSet("serve", 2, 2, "2"))
		pods := waitPods(t, env, "default", "leaderworkerset.sigs.k8s.io/name=serve", 4, 60*time.Second)
		t.Logf("4 pods Running and Ready %s after the LeaderWorkerSet's creation", time.Since(created))

		var leaders, workers []string
		for _, p := range pods {
			group, worker := p.Labels["leaderworkerset.sigs.k8s.io/group-index"], p.Labels["leaderworkerset.sigs.k8s.io/worker-index"]
			if group == "" || worker == "" || p.Labels["leaderworkerset.sigs.k8s.io/group-key"] == "" {
				t.Errorf("pod %s lacks group labels: %v", p.Name, p.Labels)
			}
			if worker == "0" {
				leaders = append(leaders, p.Name+"/"+group)
				if c := p.Spec.Containers[0]; c.StartupProbe == nil {
					t.Errorf("leader %s lost its startup probe", p.Name)
				}
			} else {
				workers = append(workers, p.Name+"/"+group+"/"+worker)
			}
			checkGPUs(t, p, "2")
		}
		slices.Sort(leaders)
		slices.Sort(workers)
		if want := []string{"serve-0/0", "serve-1/1"}; !slices.Equal(leaders, want) {
			t.Errorf("leaders (name/group) %v, want %v", leaders, want)
		}
		if want := []string{"serve-0-1/0/1", "serve-1-1/1/1"}; !slices.Equal(workers, want) {
			t.Errorf("workers (name/group/worker) %v, want %v", workers, want)
		}
		waitFor(t, 30*time.Second, "LeaderWorkerSet serve readyReplicas 2", func() (bool, error) {
			lws, err := env.Dynamic.Resource(leaderWorkerSets).Namespace("default").Get(ctx, "serve", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			ready, _, _ := unstructured.NestedInt64(lws.Object, "status", "readyReplicas")
			return ready == 2, nil
		})
	})

	t.Run("RayCluster", func(t *testing.T) {
		k := kueueClient{t: t, ctx: ctx, env: env}
		created := time.Now()
		k.create(rayClusters, "default", rayCluster("ray", "", 2, "1"))
		pods := waitPods(t, env, "default", "ray.io/cluster=ray", 3, 60*time.Second)
		t.Logf("head and 2 workers Running and Ready %s after the RayCluster's creation", time.Since(created))
		var heads, workers int
		for _, p := range pods {
			switch p.Labels["ray.io/node-type"] {
			case "head":
				heads++
			case "worker":
				workers++
				checkGPUs(t, p, "1")
				if p.Labels["ray.io/group"] != "gpu" {
					t.Errorf("worker %s in group %q, want gpu", p.Name, p.Labels["ray.io/group"])
				}
				if !slices.ContainsFunc(p.Spec.Tolerations, func(tol corev1.Toleration) bool { return tol.Key == GPUResource }) {
					t.Errorf("worker %s lost its %s toleration: %v", p.Name, GPUResource, p.Spec.Tolerations)
				}
			}
		}
		if heads != 1 || workers != 2 {
			t.Errorf("%d head and %d worker pods, want 1 and 2", heads, workers)
		}
		waitFor(t, 60*time.Second, "RayCluster ray state ready with 2 ready workers", func() (bool, error) {
			rc, err := env.Dynamic.Resource(rayClusters).Namespace("default").Get(ctx, "ray", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			state, _, _ := unstructured.NestedString(rc.Object, "status", "state")
			ready, _, _ := unstructured.NestedInt64(rc.Object, "status", "readyWorkerReplicas")
			return state == "ready" && ready == 2, nil
		})
	})

	t.Run("Kueue holds a RayCluster that does not fit", func(t *testing.T) {
		k := kueueClient{t: t, ctx: ctx, env: env}
		k.create(resourceFlavors, "", map[string]any{"kind": "ResourceFlavor", "metadata": map[string]any{"name": "default-flavor"}})
		k.create(clusterQueues, "", clusterQueue("ray-queue", "20", "80Gi", "2", nil))
		k.create(localQueues, "default", localQueue("ray-local", "ray-queue"))
		k.waitCondition(clusterQueues, "", "ray-queue", "Active", 30*time.Second)

		// 2 workers × 2 GPUs against a quota of 2 GPUs.
		k.create(rayClusters, "default", rayCluster("too-big", "ray-local", 2, "2"))
		rc, err := env.Dynamic.Resource(rayClusters).Namespace("default").Get(ctx, "too-big", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if suspend, _, _ := unstructured.NestedBool(rc.Object, "spec", "suspend"); !suspend {
			t.Error("Kueue's webhook did not suspend the queued RayCluster")
		}
		wl := workloadOfKind(t, env, "default", "RayCluster", "too-big", 30*time.Second)
		waitFor(t, 30*time.Second, "Workload "+wl+" pending for lack of quota", func() (bool, error) {
			w, err := env.Dynamic.Resource(workloads).Namespace("default").Get(ctx, wl, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return conditionIs(w, "QuotaReserved", "False") && strings.Contains(conditionMessage(w, "QuotaReserved"), "insufficient"), nil
		})
		// KubeRay has seen the suspended cluster (state "suspended" is set by
		// its reconciler, with no pods), and has created none.
		waitFor(t, 30*time.Second, "RayCluster too-big state suspended", func() (bool, error) {
			rc, err := env.Dynamic.Resource(rayClusters).Namespace("default").Get(ctx, "too-big", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			state, _, _ := unstructured.NestedString(rc.Object, "status", "state")
			return state == "suspended", nil
		})
		pods, err := env.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "ray.io/cluster=too-big"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 0 {
			t.Errorf("the held RayCluster has %d pods", len(pods.Items))
		}

		// One that fits is admitted, and KubeRay gives it its pods.
		k.create(rayClusters, "default", rayCluster("fits", "ray-local", 1, "1"))
		fits := workloadOfKind(t, env, "default", "RayCluster", "fits", 30*time.Second)
		k.waitCondition(workloads, "default", fits, "Admitted", 30*time.Second)
		waitPods(t, env, "default", "ray.io/cluster=fits", 2, 60*time.Second)
		if k.hasCondition(workloads, "default", wl, "QuotaReserved") {
			t.Error("the RayCluster that does not fit got quota")
		}
	})
	t.Run("LWS webhooks down and up", func(t *testing.T) {
		k := kueueClient{t: t, ctx: ctx, env: env}
		if err := env.StopController(ctx, "lws"); err != nil {
			t.Fatal(err)
		}
		obj := leaderWorkerSet("while-down", 1, 2, "1")
		obj["apiVersion"] = LWSGroupVersion.String()
		_, err := env.Dynamic.Resource(leaderWorkerSets).Namespace("default").Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "webhook") {
			t.Errorf("creating a LeaderWorkerSet with the LWS controller down: %v, want a webhook error", err)
		}
		start := time.Now()
		if err := env.StartController(ctx, "lws"); err != nil {
			t.Fatal(err)
		}
		t.Logf("LWS controller restarted in %s", time.Since(start))
		k.create(leaderWorkerSets, "default", leaderWorkerSet("after-restart", 1, 2, "1"))
		waitPods(t, env, "default", "leaderworkerset.sigs.k8s.io/name=after-restart", 2, 60*time.Second)
	})

	procs := append(env.Processes(), env.PodProcesses()...)
	for _, c := range []Component{KubeRayOperator, LWSController, KueueManager} {
		if !slices.ContainsFunc(procs, func(p Process) bool { return p.Path == env.Binaries[c] }) {
			t.Errorf("no %s among the processes: %+v", c, procs)
		}
	}
	start := time.Now()
	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	t.Logf("Stop: %s", time.Since(start))
	for _, p := range procs {
		if err := syscall.Kill(p.PID, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) is still there after Stop: kill -0 = %v", p.Name, p.PID, err)
		}
	}
}

// leaderWorkerSet is a LeaderWorkerSet whose leader and worker pods ask for
// gpus GPUs each; the leader has a startup probe.
func leaderWorkerSet(name string, replicas, size int64, gpus string) map[string]any {
	container := func(name string) map[string]any {
		return map[string]any{
			"name":  name,
			"image": "example.invalid/vllm:latest", // never pulled: kwok runs no containers
			"resources": map[string]any{
				"requests": map[string]any{"cpu": "1", "memory": "1Gi"},
				"limits":   map[string]any{GPUResource: gpus},
			},
		}
	}
	leader := container("leader")
	leader["startupProbe"] = map[string]any{
		"httpGet":          map[string]any{"path": "/health", "port": int64(8000)},
		"failureThreshold": int64(60),
		"periodSeconds":    int64(10),
	}
	return map[string]any{
		"kind":     "LeaderWorkerSet",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"replicas": replicas,
			"leaderWorkerTemplate": map[string]any{
				"size":           size,
				"leaderTemplate": map[string]any{"spec": map[string]any{"containers": []any{leader}}},
				"workerTemplate": map[string]any{"spec": map[string]any{"containers": []any{container("worker")}}},
			},
		},
	}
}

// rayCluster is a RayCluster with a CPU head and one worker group "gpu" of
// workers asking for gpus GPUs each and tolerating the GPU taint; in queue
// (a LocalQueue) when not empty.
func rayCluster(name, queue string, workers int64, gpus string) map[string]any {
	const image = "example.invalid/ray:2.46.0" // never pulled
	meta := map[string]any{"name": name}
	if queue != "" {
		meta["labels"] = map[string]any{"kueue.x-k8s.io/queue-name": queue}
	}
	return map[string]any{
		"kind":     "RayCluster",
		"metadata": meta,
		"spec": map[string]any{
			"rayVersion": "2.46.0",
			"headGroupSpec": map[string]any{
				"rayStartParams": map[string]any{},
				"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
					"name":  "ray-head",
					"image": image,
					"resources": map[string]any{
						"requests": map[string]any{"cpu": "1", "memory": "2Gi"},
						"limits":   map[string]any{"cpu": "1", "memory": "2Gi"},
					},
				}}}},
			},
			"workerGroupSpecs": []any{map[string]any{
				"groupName":      "gpu",
				"replicas":       workers,
				"minReplicas":    workers,
				"maxReplicas":    workers,
				"rayStartParams": map[string]any{},
				"template": map[string]any{"spec": map[string]any{
					"tolerations": []any{map[string]any{"key": GPUResource, "operator": "Exists", "effect": "NoSchedule"}},
					"containers": []any{map[string]any{
						"name":  "ray-worker",
						"image": image,
						"resources": map[string]any{
							"requests": map[string]any{"cpu": "2", "memory": "4Gi"},
							"limits":   map[string]any{"cpu": "2", "memory": "4Gi", GPUResource: gpus},
						},
					}},
				}},
			}},
		},
	}
}

// waitPods waits until exactly n pods match selector, each bound to a node,
// Running and Ready, and returns them.
func waitPods(t *testing.T, env *Env, namespace, selector string, n int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	waitFor(t, timeout, fmt.Sprintf("%d pods %s Running and Ready", n, selector), func() (bool, error) {
		list, err := env.Client.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		if len(list.Items) != n {
			return false, nil
		}
		for _, p := range list.Items {
			ready := slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
				return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
			})
			if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning || !ready {
				return false, nil
			}
		}
		pods = list.Items
		return true, nil
	})
	return pods
}

// checkGPUs checks that the pod's first container asks for gpus GPUs and that
// it runs on a GPU node.
func checkGPUs(t *testing.T, p corev1.Pod, gpus string) {
	t.Helper()
	if got := p.Spec.Containers[0].Resources.Limits[GPUResource]; got.Cmp(resource.MustParse(gpus)) != 0 {
		t.Errorf("pod %s: %s limit %s, want %s", p.Name, GPUResource, got.String(), gpus)
	}
	if !strings.HasPrefix(p.Spec.NodeName, "gpu-") {
		t.Errorf("pod %s on node %q, want a gpu-* node", p.Name, p.Spec.NodeName)
	}
}

// workloadOfKind waits for the Workload Kueue creates for an object of kind
// and returns its name.
func workloadOfKind(t *testing.T, env *Env, namespace, kind, name string, timeout time.Duration) string {
	t.Helper()
	var wl string
	waitFor(t, timeout, "the Workload of "+kind+" "+namespace+"/"+name, func() (bool, error) {
		list, err := env.Dynamic.Resource(workloads).Namespace(namespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, w := range list.Items {
			for _, o := range w.GetOwnerReferences() {
				if o.Kind == kind && o.Name == name {
					wl = w.GetName()
					return true, nil
				}
			}
		}
		return false, nil
	})
	return wl
}

func conditionIs(obj *unstructured.Unstructured, condition, status string) bool {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		if c, _ := c.(map[string]any); c["type"] == condition {
			return c["status"] == status
		}
	}
	return false
}

func conditionMessage(obj *unstructured.Unstructured, condition string) string {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		if c, _ := c.(map[string]any); c["type"] == condition {
			msg, _ := c["message"].(string)
			return msg
		}
	}
	return ""
}
