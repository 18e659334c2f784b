package testenv

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
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
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

var (
	kueueGV           = schema.GroupVersion{Group: "kueue.x-k8s.io", Version: "v1beta2"}
	resourceFlavors   = kueueGV.WithResource("resourceflavors")
	clusterQueues     = kueueGV.WithResource("clusterqueues")
	localQueues       = kueueGV.WithResource("localqueues")
	workloads         = kueueGV.WithResource("workloads")
	priorityClasses   = kueueGV.WithResource("workloadpriorityclasses")
	clusterQueuesV1b1 = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "clusterqueues"}
)

// TestKueue runs the real Kueue manager (Kueue's chart, its pod run by the
// pod runner) against the cluster and watches it admit, hold and preempt
// Jobs; then stops and restarts it, and checks that Stop leaves no Kueue
// process. Runs only with TF_ACC or TESTENV_E2E set.
func TestKueue(t *testing.T) {
	if os.Getenv("TF_ACC") == "" && os.Getenv("TESTENV_E2E") == "" {
		t.Skip("set TF_ACC or TESTENV_E2E to start a cluster")
	}
	if os.Getenv("TESTENV_KUBECONFIG") != "" {
		t.Skip("runs and stops its own Kueue manager: not against TESTENV_KUBECONFIG")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	begin := time.Now()
	env, err := Start(ctx, Options{
		Controllers: []Controller{Kueue()},
		Nodes:       []NodePool{{Name: "gpu", Count: 1, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Start with Kueue: %s", time.Since(begin))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = env.Stop()
		}
	})
	k := kueueClient{t: t, ctx: ctx, env: env}

	t.Run("certificates: Kueue's own, in its webhook configurations", func(t *testing.T) {
		s, err := env.Client.CoreV1().Secrets(KueueNamespace).Get(ctx, "kueue-webhook-server-cert", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Data["tls.crt"]) == 0 || len(s.Data["ca.crt"]) == 0 {
			t.Fatalf("Kueue's cert rotator did not fill its Secret: keys %v", slices.Collect(maps.Keys(s.Data)))
		}
		v, err := env.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "kueue-validating-webhook-configuration", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range v.Webhooks {
			if string(w.ClientConfig.CABundle) != string(s.Data["ca.crt"]) {
				t.Errorf("webhook %s: caBundle is not the CA of Kueue's Secret", w.Name)
			}
		}
	})

	t.Run("one-GPU walkthrough", func(t *testing.T) {
		k.create(resourceFlavors, "", map[string]any{"kind": "ResourceFlavor", "metadata": map[string]any{"name": "default-flavor"}})
		k.create(clusterQueues, "", clusterQueue("cluster-queue", "9", "36Gi", "1", nil))
		k.create(localQueues, "default", localQueue("gpu-local-queue", "cluster-queue"))
		k.waitCondition(clusterQueues, "", "cluster-queue", "Active", 30*time.Second)

		// Through the conversion webhook (without logging the API server's
		// deprecation warning).
		cfg := rest.CopyConfig(env.RESTConfig)
		cfg.WarningHandler = rest.NoWarnings{}
		quiet, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cq, err := quiet.Resource(clusterQueuesV1b1).Get(ctx, "cluster-queue", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("v1beta1 ClusterQueue: %v", err)
		}
		if cq.GetAPIVersion() != "kueue.x-k8s.io/v1beta1" {
			t.Errorf("v1beta1 read returned %s", cq.GetAPIVersion())
		}

		created := time.Now()
		k.createJob("default", "sample-job-1", "gpu-local-queue", "", "6s")
		k.waitCondition(workloads, "default", k.workloadOf("default", "sample-job-1", 30*time.Second), "Admitted", 30*time.Second)
		k.waitJob("default", "sample-job-1", "unsuspended", 30*time.Second, func(j *batchv1.Job) bool { return !ptr.Deref(j.Spec.Suspend, true) })
		t.Logf("admission latency (create → Job unsuspended): %s", time.Since(created))
		k.createJob("default", "sample-job-2", "gpu-local-queue", "", "1s")
		wl2 := k.workloadOf("default", "sample-job-2", 30*time.Second)

		pod := k.waitPod("default", "sample-job-1", 30*time.Second)
		if pod.Spec.NodeName != "gpu-0" {
			t.Errorf("pod %s on node %q, want gpu-0", pod.Name, pod.Spec.NodeName)
		}
		t.Logf("pod scheduled %s after the Job's creation", time.Since(created))

		// The second Job is held while the first runs.
		time.Sleep(2 * time.Second)
		j1 := k.job("default", "sample-job-1")
		if j1.Status.CompletionTime != nil {
			t.Fatal("the first Job completed before the second could be checked: give it a longer delay")
		}
		if j2 := k.job("default", "sample-job-2"); !ptr.Deref(j2.Spec.Suspend, false) {
			t.Error("the second Job is not suspended while the first holds the only GPU")
		}
		if pods := k.pods("default", "sample-job-2"); len(pods) != 0 {
			t.Errorf("the second Job has %d pods while suspended", len(pods))
		}
		if k.hasCondition(workloads, "default", wl2, "QuotaReserved") {
			t.Error("the second Workload has quota while the first holds the only GPU")
		}

		k.waitJob("default", "sample-job-1", "Complete", 60*time.Second, jobComplete)
		done := time.Now()
		k.waitJob("default", "sample-job-2", "unsuspended", 30*time.Second, func(j *batchv1.Job) bool { return !ptr.Deref(j.Spec.Suspend, true) })
		t.Logf("second Job admitted %s after the first completed", time.Since(done))
		k.waitJob("default", "sample-job-2", "Complete", 60*time.Second, jobComplete)
	})

	t.Run("preemption", func(t *testing.T) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "preempt"}}
		if _, err := env.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		k.create(priorityClasses, "", map[string]any{"kind": "WorkloadPriorityClass", "metadata": map[string]any{"name": "low"}, "value": int64(10)})
		k.create(priorityClasses, "", map[string]any{"kind": "WorkloadPriorityClass", "metadata": map[string]any{"name": "high"}, "value": int64(1000)})
		k.create(clusterQueues, "", clusterQueue("preempting-queue", "9", "36Gi", "1", map[string]any{"withinClusterQueue": "LowerPriority"}))
		k.create(localQueues, "preempt", localQueue("preempting-local-queue", "preempting-queue"))
		k.waitCondition(clusterQueues, "", "preempting-queue", "Active", 30*time.Second)

		k.createJob("preempt", "low", "preempting-local-queue", "low", "10m")
		low := k.workloadOf("preempt", "low", 30*time.Second)
		k.waitCondition(workloads, "preempt", low, "Admitted", 30*time.Second)
		k.waitPod("preempt", "low", 30*time.Second)

		arrived := time.Now()
		k.createJob("preempt", "high", "preempting-local-queue", "high", "1s")
		high := k.workloadOf("preempt", "high", 30*time.Second)
		k.waitCondition(workloads, "preempt", low, "Evicted", 30*time.Second)
		t.Logf("low-priority Workload evicted %s after the high-priority Job arrived", time.Since(arrived))
		k.waitJob("preempt", "low", "suspended again", 30*time.Second, func(j *batchv1.Job) bool { return ptr.Deref(j.Spec.Suspend, false) })
		k.waitCondition(workloads, "preempt", high, "Admitted", 60*time.Second)
		t.Logf("high-priority Workload admitted %s after its Job arrived", time.Since(arrived))
		if k.hasCondition(workloads, "preempt", low, "Admitted") {
			t.Error("the low-priority Workload is still admitted")
		}
		k.waitJob("preempt", "high", "Complete", 60*time.Second, jobComplete)
	})

	t.Run("webhooks down and up", func(t *testing.T) {
		if err := env.StopController(ctx, "kueue"); err != nil {
			t.Fatal(err)
		}
		job := jobObject("default", "while-down", "gpu-local-queue", "", "1s")
		_, err := env.Client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "webhook") {
			t.Errorf("creating a Job with the Kueue manager down: %v, want a webhook error", err)
		}
		start := time.Now()
		if err := env.StartController(ctx, "kueue"); err != nil {
			t.Fatal(err)
		}
		t.Logf("Kueue manager restarted in %s", time.Since(start))
		k.createJob("default", "after-restart", "gpu-local-queue", "", "1s")
		k.waitJob("default", "after-restart", "Complete", 60*time.Second, jobComplete)
	})

	var kueuePID int
	for _, p := range env.PodProcesses() {
		if p.Path == env.Binaries[KueueManager] {
			kueuePID = p.PID
		}
	}
	if kueuePID == 0 {
		t.Fatalf("no Kueue manager among the pod runner's processes: %+v", env.PodProcesses())
	}
	procs := append(env.Processes(), env.PodProcesses()...)
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
	// The manager was its process group's leader: nothing of the group is left.
	if err := syscall.Kill(-kueuePID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kueue's process group %d is still there after Stop: kill -0 = %v", kueuePID, err)
	}
}

func clusterQueue(name, cpu, memory, gpus string, preemption map[string]any) map[string]any {
	spec := map[string]any{
		"namespaceSelector": map[string]any{},
		"resourceGroups": []any{map[string]any{
			"coveredResources": []any{"cpu", "memory", GPUResource},
			"flavors": []any{map[string]any{
				"name": "default-flavor",
				"resources": []any{
					map[string]any{"name": "cpu", "nominalQuota": cpu},
					map[string]any{"name": "memory", "nominalQuota": memory},
					map[string]any{"name": GPUResource, "nominalQuota": gpus},
				},
			}},
		}},
	}
	if preemption != nil {
		spec["preemption"] = preemption
	}
	return map[string]any{"kind": "ClusterQueue", "metadata": map[string]any{"name": name}, "spec": spec}
}

func localQueue(name, clusterQueue string) map[string]any {
	return map[string]any{"kind": "LocalQueue", "metadata": map[string]any{"name": name}, "spec": map[string]any{"clusterQueue": clusterQueue}}
}

// jobObject is a suspended one-pod Job asking for one GPU in a Kueue queue,
// whose pod runs for delay (PodCompleteDelayAnnotation).
func jobObject(namespace, name, queue, priorityClass, delay string) *batchv1.Job {
	labels := map[string]string{"kueue.x-k8s.io/queue-name": queue}
	if priorityClass != "" {
		labels["kueue.x-k8s.io/priority-class"] = priorityClass
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			Suspend:      ptr.To(true),
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{PodCompleteDelayAnnotation: delay}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:  "main",
						Image: "example.invalid/train:latest", // never pulled: kwok runs no containers
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("200Mi")},
							Limits:   corev1.ResourceList{GPUResource: resource.MustParse("1")},
						},
					}},
				},
			},
		},
	}
}

func jobComplete(j *batchv1.Job) bool {
	return slices.ContainsFunc(j.Status.Conditions, func(c batchv1.JobCondition) bool {
		return c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue
	})
}

// kueueClient holds what TestKueue's helpers share; they fail the test on error.
type kueueClient struct {
	t   *testing.T
	ctx context.Context
	env *Env
}

func (k kueueClient) create(gvr schema.GroupVersionResource, namespace string, obj map[string]any) {
	k.t.Helper()
	obj["apiVersion"] = gvr.GroupVersion().String()
	if _, err := k.env.Dynamic.Resource(gvr).Namespace(namespace).Create(k.ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
		k.t.Fatalf("creating %s: %v", gvr.Resource, err)
	}
}

func (k kueueClient) createJob(namespace, name, queue, priorityClass, delay string) {
	k.t.Helper()
	if _, err := k.env.Client.BatchV1().Jobs(namespace).Create(k.ctx, jobObject(namespace, name, queue, priorityClass, delay), metav1.CreateOptions{}); err != nil {
		k.t.Fatalf("creating Job %s/%s: %v", namespace, name, err)
	}
}

func (k kueueClient) job(namespace, name string) *batchv1.Job {
	k.t.Helper()
	j, err := k.env.Client.BatchV1().Jobs(namespace).Get(k.ctx, name, metav1.GetOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	return j
}

func (k kueueClient) waitJob(namespace, name, what string, timeout time.Duration, cond func(*batchv1.Job) bool) {
	k.t.Helper()
	waitFor(k.t, timeout, fmt.Sprintf("Job %s/%s %s", namespace, name, what), func() (bool, error) {
		j, err := k.env.Client.BatchV1().Jobs(namespace).Get(k.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if slices.ContainsFunc(j.Status.Conditions, func(c batchv1.JobCondition) bool {
			return c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue
		}) {
			return false, errors.New("the Job failed")
		}
		return cond(j), nil
	})
}

func (k kueueClient) pods(namespace, job string) []corev1.Pod {
	k.t.Helper()
	pods, err := k.env.Client.CoreV1().Pods(namespace).List(k.ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job})
	if err != nil {
		k.t.Fatal(err)
	}
	return pods.Items
}

// waitPod waits for the Job's pod to be bound to a node and returns it.
func (k kueueClient) waitPod(namespace, job string, timeout time.Duration) corev1.Pod {
	k.t.Helper()
	var pod corev1.Pod
	waitFor(k.t, timeout, "a scheduled pod of Job "+namespace+"/"+job, func() (bool, error) {
		for _, p := range k.pods(namespace, job) {
			if p.Spec.NodeName != "" {
				pod = p
				return true, nil
			}
		}
		return false, nil
	})
	return pod
}

// workloadOf waits for the Workload Kueue creates for a Job and returns its name.
func (k kueueClient) workloadOf(namespace, job string, timeout time.Duration) string {
	k.t.Helper()
	var name string
	waitFor(k.t, timeout, "the Workload of Job "+namespace+"/"+job, func() (bool, error) {
		list, err := k.env.Dynamic.Resource(workloads).Namespace(namespace).List(k.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, w := range list.Items {
			for _, o := range w.GetOwnerReferences() {
				if o.Kind == "Job" && o.Name == job {
					name = w.GetName()
					return true, nil
				}
			}
		}
		return false, nil
	})
	return name
}

func (k kueueClient) hasCondition(gvr schema.GroupVersionResource, namespace, name, condition string) bool {
	k.t.Helper()
	obj, err := k.env.Dynamic.Resource(gvr).Namespace(namespace).Get(k.ctx, name, metav1.GetOptions{})
	if err != nil {
		k.t.Fatal(err)
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

func (k kueueClient) waitCondition(gvr schema.GroupVersionResource, namespace, name, condition string, timeout time.Duration) {
	k.t.Helper()
	waitFor(k.t, timeout, fmt.Sprintf("%s %s %s=True", gvr.Resource, name, condition), func() (bool, error) {
		return k.hasCondition(gvr, namespace, name, condition), nil
	})
}
