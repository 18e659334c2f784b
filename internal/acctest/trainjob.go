package acctest

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// WorkloadsGVR are Kueue's Workloads.
var WorkloadsGVR = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}

// QueuedTrainJob is a TrainJob as a data scientist submits it: a name, the
// runtime, the queue and priority labels. Its pods keep running (kwok
// completes pods otherwise) through a runtime patch that annotates them, the
// TrainJob's own way of adding pod metadata.
type QueuedTrainJob struct {
	Namespace, Name, Runtime, Queue, Priority string
	// PodAnnotations are added to the pods (default: run for 24h).
	PodAnnotations map[string]string
}

// Object is the TrainJob as Submit creates it.
func (j QueuedTrainJob) Object() *unstructured.Unstructured {
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
func (j QueuedTrainJob) Submit(t *testing.T, env *testenv.Env) {
	t.Helper()
	ctx := context.Background()
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		if _, err = env.Dynamic.Resource(TrainJobsGVR).Namespace(j.Namespace).Create(ctx, j.Object(), metav1.CreateOptions{}); err == nil {
			break
		}
		t.Logf("submitting TrainJob %s: %v", j.Name, err)
	}
	if err != nil {
		t.Fatalf("submitting TrainJob %s: %v", j.Name, err)
	}
	t.Cleanup(func() {
		policy := metav1.DeletePropagationBackground
		_ = env.Dynamic.Resource(TrainJobsGVR).Namespace(j.Namespace).Delete(context.Background(), j.Name, metav1.DeleteOptions{PropagationPolicy: &policy})
	})
}

// TrainJobState is what the test sees of a TrainJob: its suspension, its
// pods (those of the JobSet it became), and its Kueue Workload.
type TrainJobState struct {
	Suspended bool
	Pods      []corev1.Pod // pods not being deleted
	Running   int          // of them, bound to a node and Running
	Admitted  int64        // pods the Workload's admission assigns (all pod sets)
	Evictions int64        // times Kueue evicted the Workload
}

func (s TrainJobState) String() string {
	return fmt.Sprintf("{suspended:%v pods:%d running:%d admitted:%d evictions:%d}", s.Suspended, len(s.Pods), s.Running, s.Admitted, s.Evictions)
}

func (j QueuedTrainJob) Observe(env *testenv.Env) (TrainJobState, error) {
	ctx := context.Background()
	var s TrainJobState
	obj, err := env.Dynamic.Resource(TrainJobsGVR).Namespace(j.Namespace).Get(ctx, j.Name, metav1.GetOptions{})
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
	wls, err := env.Dynamic.Resource(WorkloadsGVR).Namespace(j.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "kueue.x-k8s.io/job-uid=" + string(obj.GetUID())})
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
func (j QueuedTrainJob) Eventually(t *testing.T, env *testenv.Env, what string, timeout time.Duration, ok func(TrainJobState) bool) TrainJobState {
	t.Helper()
	var last TrainJobState
	var err error
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if last, err = j.Observe(env); err == nil && ok(last) {
			return last
		}
	}
	t.Fatalf("TrainJob %s: %s: not within %s (last state %s, err %v)", j.Name, what, timeout, last, err)
	return last
}
