package multikueue_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// examples/multikueue applied to the two clusters: the worker's queues by an
// aliased provider, the manager's MultiKueue objects and queues by the
// default one. A Job submitted to the manager's LocalQueue is dispatched: a
// copy runs on the worker's GPU node, the manager creates no pods, and the
// copy's completion comes back to the manager's Job. The plan is empty
// afterwards, with no warning about the worker.
func TestAccMultiKueueExample(t *testing.T) {
	manager, worker := clustersOf(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	w := acctest.NewWorkspace(t, manager, filepath.Join(root, "examples", "multikueue"))
	w.Env = append(w.Env, "TF_VAR_worker_kubeconfig="+worker.Kubeconfig)
	out, err := w.Run("apply", "-auto-approve")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("apply:\n%s", tail(out, 25))
	if !strings.Contains(out, "worker_active = true") {
		t.Fatalf("the apply's output has no worker_active = true: the Kueue manager does not reach the worker")
	}
	check, err := kueueObject("admissionchecks", "", "multikueue").Get(manager)
	if err != nil || check == nil {
		t.Fatalf("admission check: %v", err)
	}
	code, plan := w.PlanExitCode()
	if code != 0 {
		t.Fatalf("plan -detailed-exitcode after apply exited %d, want 0:\n%s", code, plan)
	}
	if strings.Contains(plan, "MultiKueue worker") {
		t.Fatalf("the plan warns about the worker although it has the manager's queues:\n%s", plan)
	}

	job := acctest.Job{Namespace: "default", Name: "dispatched", Queue: "research", Pods: 2, GPUsPerPod: 4, RunFor: 2 * time.Second}
	job.Submit(t, manager)
	job.Eventually(t, worker, "a copy of the Job with both pods on the worker's GPU node", 2*time.Minute, func(s acctest.State) bool {
		return s.Scheduled == 2 || s.Complete
	})
	job.Eventually(t, manager, "complete in the manager (status from the worker)", 2*time.Minute, func(s acctest.State) bool { return s.Complete })
	if s, err := job.Observe(manager); err != nil || s.Pods != 0 {
		t.Fatalf("the manager ran pods of the dispatched Job: %+v (%v)", s, err)
	}
	mj, err := manager.Client.BatchV1().Jobs("default").Get(context.Background(), job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mj.Spec.ManagedBy == nil || *mj.Spec.ManagedBy != "kueue.x-k8s.io/multikueue" {
		t.Errorf("the manager's Job is managed by %v, want kueue.x-k8s.io/multikueue", mj.Spec.ManagedBy)
	}
	if mj.Status.Succeeded != 2 {
		t.Errorf("the manager's Job reports %d succeeded pods, want the worker's 2", mj.Status.Succeeded)
	}
	logRSS(t, manager, worker)
	if code, plan := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan -detailed-exitcode after the dispatched Job exited %d, want 0:\n%s", code, plan)
	}
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-lines):], "\n")
}
