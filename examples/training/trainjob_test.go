package training_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

var (
	trainJobs     = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"}
	jobSets       = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
	workloads     = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}
	clusterQueues = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}
)

// trainJob is a TrainJob as a data scientist submits it: a name, the
// runtime, the queue and priority labels. Its pods keep running (kwok
// completes pods otherwise) through a runtime patch that annotates them, the
// TrainJob's own way of adding pod metadata.
type trainJob struct {
	Namespace, Name, Runtime, Queue, Priority string
	// PodAnnotations are added to the pods (default: run for 24h).
	PodAnnotations map[string]string
}

func (j trainJob) object() *unstructured.Unstructured {
	annotations := map[string]any{testenv.PodCompleteDelayAnnotation: "24h"}
	for k, v := range j.PodAnnotations {
		annotations[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
		"metadata": map[string]any{
			"name": j.Name, "namespace": j.Namespace,
			"labels": map[string]any{"kueue.x-k8s.io/queue-name": j.Queue, "kueue.x-k8s.io/priority-class": j.Priority},
		},
		"spec": map[string]any{
			"runtimeRef": map[string]any{"name": j.Runtime, "kind": "TrainingRuntime"},
			"runtimePatches": []any{map[string]any{
				"manager": "examples.aiplatform.dev/test",
				"trainingRuntimeSpec": map[string]any{"template": map[string]any{"spec": map[string]any{
					"replicatedJobs": []any{map[string]any{
						"name": "node",
						"template": map[string]any{"spec": map[string]any{"template": map[string]any{
							"metadata": map[string]any{"annotations": annotations},
						}}},
					}},
				}}},
			}},
		},
	}}
}

// Submit creates the TrainJob (retrying while a webhook that just started
// refuses it) and deletes it when the test ends.
func (j trainJob) Submit(t *testing.T, env *testenv.Env) {
	t.Helper()
	ctx := context.Background()
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		if _, err = env.Dynamic.Resource(trainJobs).Namespace(j.Namespace).Create(ctx, j.object(), metav1.CreateOptions{}); err == nil {
			break
		}
		t.Logf("submitting TrainJob %s: %v", j.Name, err)
	}
	if err != nil {
		t.Fatalf("submitting TrainJob %s: %v", j.Name, err)
	}
	t.Cleanup(func() {
		policy := metav1.DeletePropagationBackground
		_ = env.Dynamic.Resource(trainJobs).Namespace(j.Namespace).Delete(context.Background(), j.Name, metav1.DeleteOptions{PropagationPolicy: &policy})
	})
}

// trainJobState is what the test sees of a TrainJob: its suspension, its
// pods (those of the JobSet it became), and its Kueue Workload.
type trainJobState struct {
	Suspended bool
	Pods      []corev1.Pod // pods not being deleted
	Running   int          // of them, bound to a node and Running
	Admitted  int64        // pods the Workload's admission assigns (all pod sets)
	Evictions int64        // times Kueue evicted the Workload
}

func (s trainJobState) String() string {
	return fmt.Sprintf("{suspended:%v pods:%d running:%d admitted:%d evictions:%d}", s.Suspended, len(s.Pods), s.Running, s.Admitted, s.Evictions)
}

func (j trainJob) Observe(env *testenv.Env) (trainJobState, error) {
	ctx := context.Background()
	var s trainJobState
	obj, err := env.Dynamic.Resource(trainJobs).Namespace(j.Namespace).Get(ctx, j.Name, metav1.GetOptions{})
	if err != nil {
		return s, err
	}
	s.Suspended, _, _ = unstructured.NestedBool(obj.Object, "spec", "suspend")
	pods, err := env.Client.CoreV1().Pods(j.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=" + j.Name})
	if err != nil {
		return s, err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		s.Pods = append(s.Pods, p)
		if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
			s.Running++
		}
	}
	wls, err := env.Dynamic.Resource(workloads).Namespace(j.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "kueue.x-k8s.io/job-uid=" + string(obj.GetUID())})
	if err != nil {
		return s, err
	}
	for _, w := range wls.Items {
		assignments, _, _ := unstructured.NestedSlice(w.Object, "status", "admission", "podSetAssignments")
		for _, a := range assignments {
			if m, ok := a.(map[string]any); ok {
				n, _, _ := unstructured.NestedInt64(m, "count")
				s.Admitted += n
			}
		}
		evictions, _, _ := unstructured.NestedSlice(w.Object, "status", "schedulingStats", "evictions")
		for _, e := range evictions {
			if m, ok := e.(map[string]any); ok {
				n, _, _ := unstructured.NestedInt64(m, "count")
				s.Evictions += n
			}
		}
	}
	return s, nil
}

// Eventually waits until the TrainJob's state satisfies ok and returns it.
func (j trainJob) Eventually(t *testing.T, env *testenv.Env, what string, timeout time.Duration, ok func(trainJobState) bool) trainJobState {
	t.Helper()
	var last trainJobState
	var err error
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if last, err = j.Observe(env); err == nil && ok(last) {
			return last
		}
	}
	t.Fatalf("TrainJob %s: %s: not within %s (last state %s, err %v)", j.Name, what, timeout, last, err)
	return last
}

// jobSetRestarts is how often JobSet restarted the TrainJob's group under
// its failure policy (status.restarts of the JobSet the TrainJob became).
func (j trainJob) jobSetRestarts(t *testing.T, env *testenv.Env) int64 {
	t.Helper()
	js, err := env.Dynamic.Resource(jobSets).Namespace(j.Namespace).Get(context.Background(), j.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the JobSet of TrainJob %s: %v", j.Name, err)
	}
	n, _, _ := unstructured.NestedInt64(js.Object, "status", "restarts")
	return n
}

// condition reports whether the TrainJob has the condition with status True.
func (j trainJob) condition(t *testing.T, env *testenv.Env, condition string) bool {
	t.Helper()
	obj, err := env.Dynamic.Resource(trainJobs).Namespace(j.Namespace).Get(context.Background(), j.Name, metav1.GetOptions{})
	return err == nil && conditionTrue(obj.Object, condition)
}

// waitFor polls ok until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("%s: not within %s", what, timeout)
}

// podUIDs are the UIDs of the pods, sorted.
func podUIDs(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, string(p.UID))
	}
	slices.Sort(out)
	return out
}

// checkMountsClaim checks that each pod's trainer container ("node") mounts
// the claim at mountPath and is told where through env.
func checkMountsClaim(t *testing.T, pods []corev1.Pod, claim, mountPath, env string) {
	t.Helper()
	for _, p := range pods {
		volume := ""
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
				volume = v.Name
			}
		}
		if volume == "" {
			t.Errorf("pod %s has no volume of claim %s: %+v", p.Name, claim, p.Spec.Volumes)
			continue
		}
		i := slices.IndexFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == "node" })
		if i < 0 {
			t.Errorf("pod %s has no container node", p.Name)
			continue
		}
		c := p.Spec.Containers[i]
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == volume && m.MountPath == mountPath }) {
			t.Errorf("pod %s: container node does not mount volume %s at %s: %+v", p.Name, volume, mountPath, c.VolumeMounts)
		}
		if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == env && e.Value == mountPath }) {
			t.Errorf("pod %s: container node has no %s=%s: %+v", p.Name, env, mountPath, c.Env)
		}
	}
}

// claimDir is where the claim's data lives: the test cluster's provisioner
// binds every claim to a hostPath volume on this machine (package nodes), the
// directory a kubelet would mount into the pods.
func claimDir(t *testing.T, env *testenv.Env, namespace, claim string) (volume, dir string) {
	t.Helper()
	ctx := context.Background()
	var pvc *corev1.PersistentVolumeClaim
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(250 * time.Millisecond) {
		var err error
		if pvc, err = env.Client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, claim, metav1.GetOptions{}); err != nil {
			t.Fatalf("claim %s: %v", claim, err)
		}
		if pvc.Status.Phase == corev1.ClaimBound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("claim %s is %s, not Bound", claim, pvc.Status.Phase)
		}
	}
	pv, err := env.Client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Spec.HostPath == nil {
		t.Fatalf("volume %s of claim %s is not a hostPath volume: this test reads the test cluster's own storage", pv.Name, claim)
	}
	return pv.Name, pv.Spec.HostPath.Path
}

// checkpoint is what a trainer writes: model, optimizer and step, then a
// "latest" pointer written last (by rename), so that a reader never follows
// it to a half-written step.
func writeCheckpoint(t *testing.T, dir string, step int) (path string, content []byte) {
	t.Helper()
	stepDir := filepath.Join(dir, fmt.Sprintf("step-%06d", step))
	if err := os.MkdirAll(stepDir, 0o755); err != nil {
		t.Fatal(err)
	}
	content, _ = json.Marshal(map[string]any{"step": step, "model": "model.pt", "optimizer": "optimizer.pt"})
	path = filepath.Join(stepDir, "state.json")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "latest.tmp")
	if err := os.WriteFile(tmp, []byte(filepath.Base(stepDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "latest")); err != nil {
		t.Fatal(err)
	}
	return path, content
}

// clusterQueuesActive waits until every ClusterQueue reports Active.
func clusterQueuesActive(t *testing.T, env *testenv.Env) {
	t.Helper()
	var inactive []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		list, err := env.Dynamic.Resource(clusterQueues).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		inactive = nil
		for _, q := range list.Items {
			if !conditionTrue(q.Object, "Active") {
				inactive = append(inactive, q.GetName())
			}
		}
		if len(inactive) == 0 && len(list.Items) > 0 {
			return
		}
	}
	t.Fatalf("ClusterQueues not Active after 30s: %v", inactive)
}

func conditionTrue(obj map[string]any, condition string) bool {
	conds, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == condition && m["status"] == "True" {
			return true
		}
	}
	return false
}
