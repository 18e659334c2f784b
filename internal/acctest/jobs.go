package acctest

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// Job is a batch/v1 Job submitted to a Kueue LocalQueue, as a user would:
// suspended, with the queue-name label, pods asking for GPUs (or Resource)
// and running for RunFor before kwok completes them.
type Job struct {
	Namespace, Name, Queue, Priority string
	Pods                             int32
	GPUsPerPod                       int64
	RunFor                           time.Duration
	// Resource is what GPUsPerPod counts: nvidia.com/gpu by default, e.g.
	// cpu on a cluster of CPU nodes.
	Resource corev1.ResourceName
}

// Submit creates the Job and removes it when the test ends.
func (j Job) Submit(t *testing.T, env *testenv.Env) {
	t.Helper()
	labels := map[string]string{catalog.KueueQueueLabel: j.Queue}
	if j.Priority != "" {
		labels["kueue.x-k8s.io/priority-class"] = j.Priority
	}
	pods := max(j.Pods, 1)
	suspend := true
	res := j.Resource
	if res == "" {
		res = "nvidia.com/gpu"
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: j.Namespace, Name: j.Name, Labels: labels},
		Spec: batchv1.JobSpec{
			Suspend: &suspend, Parallelism: &pods, Completions: &pods,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{testenv.PodCompleteDelayAnnotation: j.RunFor.String()}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name: "train", Image: "trainer:latest",
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{res: *resource.NewQuantity(j.GPUsPerPod, resource.DecimalSI)},
							Limits:   corev1.ResourceList{res: *resource.NewQuantity(j.GPUsPerPod, resource.DecimalSI)},
						},
					}},
				},
			},
		},
	}
	ctx := context.Background()
	if _, err := env.Client.BatchV1().Jobs(j.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("submitting job %s: %v", j.Name, err)
	}
	t.Cleanup(func() {
		policy := metav1.DeletePropagationBackground
		_ = env.Client.BatchV1().Jobs(j.Namespace).Delete(context.Background(), j.Name, metav1.DeleteOptions{PropagationPolicy: &policy})
	})
}

// State is what a test sees of a Job.
type State struct {
	Suspended bool
	Pods      int // pods that exist
	Scheduled int // pods bound to a node
	Complete  bool
	// Evictions is how often Kueue evicted the Job's Workload (its
	// status.schedulingStats), a record that outlives a quick re-admission.
	Evictions int64
}

// Observe reads the Job and its pods.
func (j Job) Observe(env *testenv.Env) (State, error) {
	ctx := context.Background()
	job, err := env.Client.BatchV1().Jobs(j.Namespace).Get(ctx, j.Name, metav1.GetOptions{})
	if err != nil {
		return State{}, err
	}
	var s State
	s.Suspended = job.Spec.Suspend != nil && *job.Spec.Suspend
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			s.Complete = true
		}
	}
	pods, err := env.Client.CoreV1().Pods(j.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + j.Name})
	if err != nil {
		return State{}, err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		s.Pods++
		if p.Spec.NodeName != "" {
			s.Scheduled++
		}
	}
	workloads, err := env.Dynamic.Resource(schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}).
		Namespace(j.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "kueue.x-k8s.io/job-uid=" + string(job.UID)})
	if err != nil {
		return State{}, err
	}
	for _, w := range workloads.Items {
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

// Eventually waits until the Job's state satisfies ok, failing the test with
// the last state seen after timeout.
func (j Job) Eventually(t *testing.T, env *testenv.Env, what string, timeout time.Duration, ok func(State) bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last State
	var err error
	for time.Now().Before(deadline) {
		if last, err = j.Observe(env); err == nil && ok(last) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("job %s: %s: not within %s (last state %+v, err %v)", j.Name, what, timeout, last, err)
}

// Consistently checks that the Job's state satisfies ok for the whole duration.
func (j Job) Consistently(t *testing.T, env *testenv.Env, what string, duration time.Duration, ok func(State) bool) {
	t.Helper()
	deadline := time.Now().Add(duration)
	for time.Now().Before(deadline) {
		s, err := j.Observe(env)
		if err != nil || !ok(s) {
			t.Fatalf("job %s: %s: broken with state %+v (err %v)", j.Name, what, s, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// String names the job in messages.
func (j Job) String() string { return fmt.Sprintf("%s/%s", j.Namespace, j.Name) }
