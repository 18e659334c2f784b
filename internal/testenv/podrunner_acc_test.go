package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

var (
	resourceFlavors = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "resourceflavors"}
	clusterQueues   = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}
	localQueues     = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "localqueues"}
)

// TestPodRunnerKueueChart installs Kueue's chart, unchanged, into a cluster
// with the pod runner: the chart's controller pod is run by the real Kueue
// manager, the chart's webhooks (Service-referenced, failurePolicy Fail) are
// reached through the egress proxy, and Kueue judges the queues: the
// ClusterQueue turns Active, a Job is suspended by Kueue's webhook and
// admitted. Deleting the pod stops its process; its replacement serves again.
func TestPodRunnerKueueChart(t *testing.T) {
	if os.Getenv("TF_ACC") == "" && os.Getenv("TESTENV_E2E") == "" {
		t.Skip("set TF_ACC or TESTENV_E2E to start a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	// Built first: the pod runner would build it when the chart's pod is
	// to run, inside the install's wait.
	if _, err := testenv.EnsureBinaries(ctx, nil, testenv.KueueManager); err != nil {
		t.Fatal(err)
	}
	env, err := testenv.Start(ctx, testenv.Options{PodRunner: true, Nodes: []testenv.NodePool{{Name: "cpu", Count: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = env.Stop()
		}
	}()

	mod, err := testenv.ModuleDir(ctx, "sigs.k8s.io/kueue", testenv.KueueVersion)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := helm.LoadChart(helm.Source{Path: filepath.Join(mod, "charts", "kueue")})
	if err != nil {
		t.Fatal(err)
	}
	rel := &helm.Release{Client: kube.NewClientFromREST(env.RESTConfig, false), Namespace: "kueue-system", Name: "kueue", Log: func(m string) { t.Log(m) }}
	begin := time.Now()
	if _, err := rel.Install(ctx, helm.Options{Chart: ch, Timeout: 3 * time.Minute}); err != nil {
		t.Fatalf("installing the chart: %v\n%s", err, logs(env))
	}
	installed := time.Since(begin)
	t.Logf("chart installed, every object ready: %s", installed.Round(10*time.Millisecond))

	t.Run("the chart's webhooks are Service-referenced with failurePolicy Fail", func(t *testing.T) {
		v, err := env.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "kueue-validating-webhook-configuration", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range v.Webhooks {
			if w.ClientConfig.Service == nil || w.ClientConfig.Service.Name != "kueue-webhook-service" || ptr.Deref(w.FailurePolicy, "") != admissionregistrationv1.Fail {
				t.Errorf("webhook %s: service %+v, failurePolicy %v", w.Name, w.ClientConfig.Service, ptr.Deref(w.FailurePolicy, ""))
			}
		}
	})

	pod := kueuePod(ctx, t, env)
	t.Run("the pod is Ready because the manager is", func(t *testing.T) {
		pid := podPID(t, pod)
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("process %d of pod %s: %v", pid, pod.Name, err)
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		args := strings.Split(string(cmdline), "\x00")
		if args[0] != env.Binaries[testenv.KueueManager] {
			t.Errorf("process %d runs %s, want the Kueue manager", pid, args[0])
		}
		if !strings.Contains(string(cmdline), "--zap-log-level=2") {
			t.Errorf("the chart's arguments are not kept: %q", args)
		}
	})

	for _, obj := range []struct {
		gvr schema.GroupVersionResource
		ns  string
		u   *unstructured.Unstructured
	}{
		{resourceFlavors, "", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": map[string]any{"name": "default"}, "spec": map[string]any{}}}},
		{clusterQueues, "", clusterQueue("team", "default")},
		{localQueues, "default", &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": map[string]any{"name": "team", "namespace": "default"},
			"spec": map[string]any{"clusterQueue": "team"}}}},
	} {
		if _, err := env.Dynamic.Resource(obj.gvr).Namespace(obj.ns).Create(ctx, obj.u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s %s: %v\n%s", obj.gvr.Resource, obj.u.GetName(), err, logs(env))
		}
	}
	waitFor(t, 2*time.Minute, "ClusterQueue team Active", func() bool { return hasCondition(ctx, env, clusterQueues, "", "team", "Active") })
	t.Logf("chart install → ClusterQueue Active: %s (install %s)", time.Since(begin).Round(10*time.Millisecond), installed.Round(10*time.Millisecond))
	waitFor(t, time.Minute, "LocalQueue team Active", func() bool { return hasCondition(ctx, env, localQueues, "default", "team", "Active") })

	t.Run("the API server called the webhooks through the egress proxy", func(t *testing.T) {
		svc, err := env.Client.CoreV1().Services("kueue-system").Get(ctx, "kueue-webhook-service", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		log, _ := os.ReadFile(filepath.Join(env.Dir, "egress.log"))
		if want := "CONNECT " + svc.Spec.ClusterIP + ":443 → 127.0.0.1:"; !strings.Contains(string(log), want) {
			t.Errorf("egress.log has no %q:\n%s", want, log)
		}
	})

	t.Run("a Job in the queue is admitted", func(t *testing.T) {
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "work", Namespace: "default", Labels: map[string]string{"kueue.x-k8s.io/queue-name": "team"}},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
			}}},
		}
		created, err := env.Client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !ptr.Deref(created.Spec.Suspend, false) {
			t.Error("Kueue's Job webhook did not suspend the Job on create")
		}
		waitFor(t, 2*time.Minute, "Job work complete", func() bool {
			j, err := env.Client.BatchV1().Jobs("default").Get(ctx, "work", metav1.GetOptions{})
			return err == nil && j.Status.Succeeded == 1
		})
	})

	t.Run("deleting the pod stops its process; the new pod serves", func(t *testing.T) {
		pid := podPID(t, pod)
		if err := env.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, time.Minute, fmt.Sprintf("process %d gone", pid), func() bool { return !alive(pid) })
		next := kueuePod(ctx, t, env)
		if next.Name == pod.Name {
			t.Fatalf("the same pod %s", next.Name)
		}
		lq := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": map[string]any{"name": "second", "namespace": "default"},
			"spec": map[string]any{"clusterQueue": "team"}}}
		if _, err := env.Dynamic.Resource(localQueues).Namespace("default").Create(ctx, lq, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating a LocalQueue through the new pod's webhooks: %v", err)
		}
		waitFor(t, 2*time.Minute, "LocalQueue second Active", func() bool { return hasCondition(ctx, env, localQueues, "default", "second", "Active") })
		pod = next
	})

	pid := podPID(t, pod)
	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if alive(pid) {
		t.Errorf("Stop left the pod runner's process %d running", pid)
	}
}

func clusterQueue(name, flavor string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"namespaceSelector": map[string]any{},
			"resourceGroups": []any{map[string]any{
				"coveredResources": []any{"cpu"},
				"flavors": []any{map[string]any{"name": flavor, "resources": []any{
					map[string]any{"name": "cpu", "nominalQuota": "4"}}}},
			}},
		},
	}}
}

// kueuePod waits for the chart's controller pod to be Ready and returns it.
func kueuePod(ctx context.Context, t *testing.T, env *testenv.Env) corev1.Pod {
	t.Helper()
	var ready corev1.Pod
	waitFor(t, 2*time.Minute, "a Ready Kueue controller pod", func() bool {
		pods, err := env.Client.CoreV1().Pods("kueue-system").List(ctx, metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
		if err != nil {
			return false
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready = p
					return true
				}
			}
		}
		return false
	})
	return ready
}

// podPID is the PID of the process the runner reports for the pod.
func podPID(t *testing.T, pod corev1.Pod) int {
	t.Helper()
	for _, cs := range pod.Status.ContainerStatuses {
		if id, ok := strings.CutPrefix(cs.ContainerID, "testenv://"); ok {
			pid, err := strconv.Atoi(id)
			if err == nil {
				return pid
			}
		}
	}
	t.Fatalf("pod %s reports no process: %+v", pod.Name, pod.Status.ContainerStatuses)
	return 0
}

func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] != 'Z'
}

func hasCondition(ctx context.Context, env *testenv.Env, gvr schema.GroupVersionResource, ns, name, condition string) bool {
	obj, err := env.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		c, _ := c.(map[string]any)
		if c["type"] == condition && c["status"] == "True" {
			return true
		}
	}
	return false
}

// waitFor polls cond until it holds, failing the test after timeout (a bound
// for a broken cluster, not a timing assertion).
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s", what, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// logs is the tail of the pod runner's process logs, for failures.
func logs(env *testenv.Env) string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(env.Dir, "pods", "*.log"))
	files = append(files, filepath.Join(env.Dir, "egress.log"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			continue
		}
		s := string(data)
		if len(s) > 4000 {
			s = s[len(s)-4000:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", f, s)
	}
	return b.String()
}
