package testenv

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/nodes"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
)

// TestCluster starts a real cluster with scheduling and two 8-GPU fake nodes,
// runs a 1-GPU Job to completion, installs Kueue's CRDs, restarts the API
// server, adds and removes a node, and checks that Stop leaves no process.
// It needs the binaries (built on first run, minutes) and runs only with
// TF_ACC or TESTENV_E2E set.
func TestCluster(t *testing.T) {
	if os.Getenv("TF_ACC") == "" && os.Getenv("TESTENV_E2E") == "" {
		t.Skip("set TF_ACC or TESTENV_E2E to start a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	begin := time.Now()
	env, err := Start(ctx, Options{
		Scheduling: true,
		Nodes:      []NodePool{{Name: "h100", Count: 2, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", GPUMemory: "81559"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Start: %s", time.Since(begin))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = env.Stop()
		}
	})

	t.Run("version", func(t *testing.T) {
		v, err := env.Client.Discovery().ServerVersion()
		if err != nil {
			t.Fatal(err)
		}
		if v.GitVersion != KubernetesVersion {
			t.Errorf("/version gitVersion = %q, want %q", v.GitVersion, KubernetesVersion)
		}
	})

	t.Run("nodes", func(t *testing.T) {
		list, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 2 {
			t.Fatalf("%d kwok nodes, want 2", len(list.Items))
		}
		for _, n := range list.Items {
			if !nodes.Schedulable(&n) {
				t.Errorf("node %s not Ready/schedulable: %+v %+v", n.Name, n.Status.Conditions, n.Spec.Taints)
			}
			if got := n.Status.Allocatable[GPUResource]; got.Value() != 8 {
				t.Errorf("node %s allocatable %s = %s, want 8", n.Name, GPUResource, got.String())
			}
			if n.Labels[GPUProductLabel] != "NVIDIA-H100-80GB-HBM3" || n.Labels[GPUMemoryLabel] != "81559" || n.Labels[GPUCountLabel] != "8" {
				t.Errorf("node %s labels %v", n.Name, n.Labels)
			}
		}
	})

	t.Run("gpu job runs to completion", func(t *testing.T) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "e2e"}}
		if _, err := env.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "e2e"},
			Spec: batchv1.JobSpec{
				BackoffLimit: ptr.To[int32](0),
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{PodCompleteDelayAnnotation: "1s"}},
					Spec: corev1.PodSpec{
						RestartPolicy: corev1.RestartPolicyNever,
						Containers: []corev1.Container{{
							Name:  "train",
							Image: "example.invalid/train:latest", // never pulled: kwok runs no containers
							Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
								GPUResource: resource.MustParse("1"),
							}},
						}},
					},
				},
			},
		}
		if _, err := env.Client.BatchV1().Jobs("e2e").Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		waitFor(t, 90*time.Second, "Job e2e/train Complete", func() (bool, error) {
			j, err := env.Client.BatchV1().Jobs("e2e").Get(ctx, "train", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range j.Status.Conditions {
				if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
					return false, errors.New("job failed: " + c.Message)
				}
				if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		t.Logf("Job complete after %s", time.Since(start))
		pods, err := env.Client.CoreV1().Pods("e2e").List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=train"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 1 {
			t.Fatalf("%d pods, want 1", len(pods.Items))
		}
		if p := pods.Items[0]; !strings.HasPrefix(p.Spec.NodeName, "h100-") || p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("pod %s on node %q in phase %s; want a kwok node, Succeeded", p.Name, p.Spec.NodeName, p.Status.Phase)
		}
	})

	t.Run("kueue CRDs", func(t *testing.T) {
		dir, err := KueueCRDDir(ctx)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := env.ApplyCRDs(ctx, dir); err != nil {
			t.Fatal(err)
		}
		t.Logf("Kueue CRDs established in %s", time.Since(start))
		if err := env.ApplyCRDs(ctx, dir); err != nil { // the update path
			t.Fatal(err)
		}
		flavors := env.Dynamic.Resource(schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "resourceflavors"})
		rf := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kueue.x-k8s.io/v1beta2",
			"kind":       "ResourceFlavor",
			"metadata":   map[string]any{"name": "h100"},
			"spec":       map[string]any{"nodeLabels": map[string]any{GPUProductLabel: "NVIDIA-H100-80GB-HBM3"}},
		}}
		if _, err := flavors.Create(ctx, rf, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("nodes join and leave", func(t *testing.T) {
		names, err := env.AddNodes(ctx, NodePool{Name: "h100", Count: 1, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3"})
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != 1 || names[0] != "h100-2" {
			t.Fatalf("AddNodes = %v, want [h100-2]", names)
		}
		if err := env.DeleteNode(ctx, "h100-2"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("external cluster", func(t *testing.T) {
		t.Setenv("TESTENV_KUBECONFIG", env.Kubeconfig)
		ext, err := Start(ctx, Options{Nodes: []NodePool{{Name: "ext", Count: 1, GPUs: 2}}})
		if err != nil {
			t.Fatal(err)
		}
		if !ext.External || ext.Host != env.Host || len(ext.Processes()) != 0 {
			t.Errorf("external env: External=%v Host=%s processes=%v", ext.External, ext.Host, ext.Processes())
		}
		if err := ext.StopAPIServer(); err == nil || !strings.Contains(err.Error(), "external") {
			t.Errorf("StopAPIServer on an external cluster: %v", err)
		}
		if err := ext.DeleteNode(ctx, "ext-0"); err != nil {
			t.Error(err)
		}
		if err := ext.Stop(); err != nil {
			t.Error(err)
		}
		if _, err := env.Client.Discovery().ServerVersion(); err != nil {
			t.Errorf("the cluster is gone after stopping the external env: %v", err)
		}
	})

	t.Run("API server restart", func(t *testing.T) {
		if err := env.StopAPIServer(); err != nil {
			t.Fatal(err)
		}
		if _, err := env.Client.Discovery().ServerVersion(); err == nil {
			t.Fatal("API server still answers after StopAPIServer")
		}
		start := time.Now()
		if err := env.StartAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("API server restarted in %s", time.Since(start))
		list, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 2 {
			t.Fatalf("after restart: %d nodes, %v", len(list.Items), err)
		}
	})

	procs := env.Processes()
	if len(procs) != 5 {
		t.Errorf("%d processes running, want 5: %+v", len(procs), procs)
	}
	dir := env.Dir
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
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s not removed: %v", dir, err)
	}
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s", what, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A port taken between picking it and binding it makes Start try again.
func TestStartRetriesTakenPort(t *testing.T) {
	if os.Getenv("TF_ACC") == "" && os.Getenv("TESTENV_E2E") == "" {
		t.Skip("set TF_ACC or TESTENV_E2E to start a cluster")
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	calls := 0
	pickPorts = func(n int) ([]int, error) {
		calls++
		ports, err := process.FreePorts(n)
		if calls == 1 && err == nil {
			ports[0] = taken.Addr().(*net.TCPAddr).Port // etcd's client port
		}
		return ports, err
	}
	defer func() { pickPorts = process.FreePorts }()

	env, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	if calls != 2 {
		t.Errorf("ports picked %d times, want 2", calls)
	}
}
