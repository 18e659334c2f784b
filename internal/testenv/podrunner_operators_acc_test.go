package testenv_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

var (
	leaderWorkerSets = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}
	rayClusters      = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}
)

// TestPodRunnerOperatorCharts installs LWS's chart (from the module, unchanged)
// and the stand-in KubeRay chart (testdata/charts/kuberay-operator with
// KubeRay's CRDs from the module) into one cluster with the pod runner, by
// hand (what Options.Controllers automates): the charts' controller pods are run by the
// real LWS controller and KubeRay operator, and they judge the objects. A
// LeaderWorkerSet passes the chart's webhooks (reached through the egress
// proxy, with the certificates LWS's own cert management wrote) and gets its
// leaders and workers; a RayCluster gets its head and workers.
func TestPodRunnerOperatorCharts(t *testing.T) {
	if os.Getenv("TF_ACC") == "" && os.Getenv("TESTENV_E2E") == "" {
		t.Skip("set TF_ACC or TESTENV_E2E to start a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	// Built first: the pod runner would build it when the chart's pod is
	// to run, inside the install's wait.
	if _, err := testenv.EnsureBinaries(ctx, nil, testenv.LWSController, testenv.KubeRayOperator); err != nil {
		t.Fatal(err)
	}
	env, err := testenv.Start(ctx, testenv.Options{PodRunner: true, Nodes: []testenv.NodePool{{Name: "cpu", Count: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = env.Stop()
		}
	}()
	client := kube.NewClientFromREST(env.RESTConfig, false)
	small := map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "256Mi"}}}
	var pids []int

	t.Run("LWS chart", func(t *testing.T) {
		mod, err := testenv.ModuleDir(ctx, "sigs.k8s.io/lws", testenv.LWSVersion)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := helm.LoadChart(helm.Source{Path: filepath.Join(mod, "charts", "lws")})
		if err != nil {
			t.Fatal(err)
		}
		rel := &helm.Release{Client: client, Namespace: "lws-system", Name: "lws", Log: func(m string) { t.Log(m) }}
		if _, err := rel.Install(ctx, helm.Options{Chart: ch, Values: small, Timeout: 3 * time.Minute}); err != nil {
			t.Fatalf("installing the chart: %v\n%s", err, logs(env))
		}
		pod := readyPod(ctx, t, env, "lws-system", "control-plane=controller-manager")
		pids = append(pids, runs(t, env, pod, testenv.LWSController, "--zap-log-level=2"))

		lws := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
			"metadata": map[string]any{"name": "serve", "namespace": "default"},
			"spec": map[string]any{
				"replicas": int64(2),
				"leaderWorkerTemplate": map[string]any{
					"size": int64(3),
					"workerTemplate": map[string]any{"spec": map[string]any{
						"containers": []any{map[string]any{"name": "w", "image": "busybox"}}}},
				},
			},
		}}
		// The chart's webhooks answer once LWS's cert management has written
		// the Secret (and the runner projected it) and patched their caBundle.
		var created *unstructured.Unstructured
		var last error
		waitFor(t, 2*time.Minute, "the LeaderWorkerSet created through the chart's webhooks", func() bool {
			created, last = env.Dynamic.Resource(leaderWorkerSets).Namespace("default").Create(ctx, lws, metav1.CreateOptions{})
			if last != nil {
				t.Logf("creating the LeaderWorkerSet: %v", last)
			}
			return last == nil
		})
		if policy, _, _ := unstructured.NestedString(created.Object, "spec", "networkConfig", "subdomainPolicy"); policy != "Shared" {
			t.Errorf("LWS's mutating webhook did not default spec.networkConfig.subdomainPolicy to Shared: %v", created.Object["spec"])
		}

		waitFor(t, 2*time.Minute, "2 leaders and 4 workers", func() bool {
			leaders, workers := lwsPods(ctx, env, "serve")
			return leaders == 2 && workers == 4
		})
		waitFor(t, 2*time.Minute, "LeaderWorkerSet serve Available", func() bool {
			return hasCondition(ctx, env, leaderWorkerSets, "default", "serve", "Available")
		})

		t.Run("the validating webhook denies a group of size 0", func(t *testing.T) {
			bad := lws.DeepCopy()
			bad.SetName("bad")
			_ = unstructured.SetNestedField(bad.Object, int64(0), "spec", "leaderWorkerTemplate", "size")
			_, err := env.Dynamic.Resource(leaderWorkerSets).Namespace("default").Create(ctx, bad, metav1.CreateOptions{})
			if err == nil || !strings.Contains(err.Error(), `"vleaderworkerset.kb.io" denied`) || !strings.Contains(err.Error(), "size must be equal or greater than 1") {
				t.Errorf("creating a LeaderWorkerSet of size 0: %v, want a denial by the webhook vleaderworkerset.kb.io", err)
			}
		})
		t.Run("the API server called the webhooks through the egress proxy", func(t *testing.T) {
			svc, err := env.Client.CoreV1().Services("lws-system").Get(ctx, "lws-webhook-service", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			log, _ := os.ReadFile(filepath.Join(env.Dir, "egress.log"))
			if want := "CONNECT " + svc.Spec.ClusterIP + ":443 → 127.0.0.1:"; !strings.Contains(string(log), want) {
				t.Errorf("egress.log has no %q:\n%s", want, log)
			}
		})
	})

	t.Run("KubeRay chart", func(t *testing.T) {
		ch, err := helm.LoadChart(helm.Source{Path: kubeRayChart(ctx, t)})
		if err != nil {
			t.Fatal(err)
		}
		rel := &helm.Release{Client: client, Namespace: "kuberay-system", Name: "kuberay", Log: func(m string) { t.Log(m) }}
		if _, err := rel.Install(ctx, helm.Options{Chart: ch, Timeout: 3 * time.Minute}); err != nil {
			t.Fatalf("installing the chart: %v\n%s", err, logs(env))
		}
		pod := readyPod(ctx, t, env, "kuberay-system", "app.kubernetes.io/name=kuberay-operator")
		pids = append(pids, runs(t, env, pod, testenv.KubeRayOperator, "--enable-leader-election=false"))

		rc := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "ray.io/v1", "kind": "RayCluster",
			"metadata": map[string]any{"name": "ray", "namespace": "default"},
			"spec": map[string]any{
				"headGroupSpec": map[string]any{
					"rayStartParams": map[string]any{},
					"template": map[string]any{"spec": map[string]any{
						"containers": []any{map[string]any{"name": "ray-head", "image": "rayproject/ray:2.46.0"}}}},
				},
				"workerGroupSpecs": []any{map[string]any{
					"groupName": "cpu", "replicas": int64(2), "minReplicas": int64(0), "maxReplicas": int64(2),
					"rayStartParams": map[string]any{},
					"template": map[string]any{"spec": map[string]any{
						"containers": []any{map[string]any{"name": "ray-worker", "image": "rayproject/ray:2.46.0"}}}},
				}},
			},
		}}
		if _, err := env.Dynamic.Resource(rayClusters).Namespace("default").Create(ctx, rc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 2*time.Minute, "a head and 2 workers", func() bool {
			pods, err := env.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "ray.io/cluster=ray"})
			if err != nil {
				return false
			}
			n := map[string]int{}
			for _, p := range pods.Items {
				n[p.Labels["ray.io/node-type"]]++
			}
			return n["head"] == 1 && n["worker"] == 2
		})
		waitFor(t, 2*time.Minute, "RayCluster ray ready", func() bool {
			obj, err := env.Dynamic.Resource(rayClusters).Namespace("default").Get(ctx, "ray", metav1.GetOptions{})
			state, _, _ := unstructured.NestedString(obj.Object, "status", "state")
			return err == nil && state == "ready"
		})
	})

	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("Stop left the pod runner's process %d running", pid)
		}
	}
}

// readyPod waits for a Ready pod matching selector and returns it.
func readyPod(ctx context.Context, t *testing.T, env *testenv.Env, ns, selector string) corev1.Pod {
	t.Helper()
	var ready corev1.Pod
	waitFor(t, 2*time.Minute, "a Ready pod "+selector+" in "+ns, func() bool {
		pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false
		}
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if p.DeletionTimestamp == nil && c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready = p
					return true
				}
			}
		}
		return false
	})
	return ready
}

// runs checks that the pod's process is alive, runs the component's binary
// and keeps the chart's argument arg; it returns the PID.
func runs(t *testing.T, env *testenv.Env, pod corev1.Pod, c testenv.Component, arg string) int {
	t.Helper()
	pid := podPID(t, pod)
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("process %d of pod %s: %v", pid, pod.Name, err)
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	args := strings.Split(string(cmdline), "\x00")
	if args[0] != env.Binaries[c] {
		t.Errorf("process %d runs %s, want %s", pid, args[0], env.Binaries[c])
	}
	if !strings.Contains(string(cmdline), arg) {
		t.Errorf("the chart's argument %s is not kept: %q", arg, args)
	}
	return pid
}

// lwsPods counts the pods of a LeaderWorkerSet: leaders (worker index 0) and
// workers.
func lwsPods(ctx context.Context, env *testenv.Env, name string) (leaders, workers int) {
	pods, err := env.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "leaderworkerset.sigs.k8s.io/name=" + name})
	if err != nil {
		return 0, 0
	}
	for _, p := range pods.Items {
		if p.Labels["leaderworkerset.sigs.k8s.io/worker-index"] == "0" {
			leaders++
		} else {
			workers++
		}
	}
	return leaders, workers
}

// kubeRayChart assembles the stand-in KubeRay chart in a temporary directory:
// testdata/charts/kuberay-operator plus KubeRay's CRDs from the ray-operator
// module (never committed to this repository).
func kubeRayChart(ctx context.Context, t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	crds, err := testenv.KubeRayCRDDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "kuberay-operator")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, "testdata", "charts", "kuberay-operator"))); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "crds"), os.DirFS(crds)); err != nil {
		t.Fatal(err)
	}
	return dir
}
