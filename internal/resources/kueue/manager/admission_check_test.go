package manager_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

func gvr(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: resource}
}

// An AdmissionCheck whose controller has not marked it Active keeps the
// queue's workloads pending: Kueue reserves no quota and the Job stays
// suspended with no pods. Marked Active (as its controller would), Kueue
// reserves quota but still waits for the check; once the check says Ready
// for the workload, the Job runs.
func TestAccAdmissionCheckNotReadyKeepsWorkloadsPending(t *testing.T) {
	env := acctest.Env(t)
	config := acctest.Provider(env) + fmt.Sprintf(`
resource "aiplatform_resource_flavor" "b1" {
  name        = "block-b1"
  node_labels = { %q = "b1" }
}

resource "aiplatform_admission_check" "manual" {
  name            = "manual-approval"
  controller_name = "example.com/manual-approval"
}

resource "aiplatform_cluster_queue" "gated" {
  name                      = "gated"
  admission_checks_strategy = [{ name = aiplatform_admission_check.manual.name, on_flavors = [aiplatform_resource_flavor.b1.name] }]
  resource_groups = [{
    covered_resources = ["nvidia.com/gpu"]
    flavors = [{ name = aiplatform_resource_flavor.b1.name, resources = [{ name = "nvidia.com/gpu", nominal_quota = "8" }] }]
  }]
}

resource "aiplatform_local_queue" "gated" {
  name          = "gated"
  namespace     = "default"
  cluster_queue = aiplatform_cluster_queue.gated.name
}
`, blockLabel)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{{
			Config:           config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check: func(*terraform.State) error {
				job, err := submit(t, env, "gated-1", "gated", 1, 1, nil)
				if err != nil {
					return err
				}
				// Kueue has judged the workload: no quota while the check is
				// not Active.
				wl, err := waitWorkload(env, job, "QuotaReserved is False", func(w *unstructured.Unstructured) bool {
					return condition(w, "QuotaReserved") == "False"
				})
				if err != nil {
					return err
				}
				if err := stillPending(env, job); err != nil {
					return fmt.Errorf("%w (workload conditions %v)", err, conditions(wl))
				}
				if err := markCheckActive(env, "manual-approval"); err != nil {
					return err
				}
				if _, err := waitWorkload(env, job, "quota reserved, check Pending", func(w *unstructured.Unstructured) bool {
					return condition(w, "QuotaReserved") == "True" && checkState(w, "manual-approval") == "Pending"
				}); err != nil {
					return err
				}
				if err := stillPending(env, job); err != nil {
					return err
				}
				if err := approve(env, job, "manual-approval"); err != nil {
					return err
				}
				if err := waitJob(env, job, "unsuspended", func(j *batchv1.Job) bool { return j.Spec.Suspend != nil && !*j.Spec.Suspend }); err != nil {
					return err
				}
				return finish(env, job)
			},
		}},
	})
}

func stillPending(env *testenv.Env, job *batchv1.Job) error {
	ctx := context.Background()
	j, err := env.Client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pods, err := env.Client.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job.Name})
	if err != nil {
		return err
	}
	if j.Spec.Suspend == nil || !*j.Spec.Suspend || len(pods.Items) > 0 {
		return fmt.Errorf("job %s runs before its admission check passed: suspend %v, %d pods", job.Name, j.Spec.Suspend, len(pods.Items))
	}
	return nil
}

// waitWorkload waits until the Job's Workload satisfies ok.
func waitWorkload(env *testenv.Env, job *batchv1.Job, what string, ok func(*unstructured.Unstructured) bool) (*unstructured.Unstructured, error) {
	var last *unstructured.Unstructured
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		list, err := env.Dynamic.Resource(gvr("workloads")).Namespace(job.Namespace).List(context.Background(),
			metav1.ListOptions{LabelSelector: "kueue.x-k8s.io/job-uid=" + string(job.UID)})
		if err == nil && len(list.Items) == 1 {
			last = &list.Items[0]
			if ok(last) {
				return last, nil
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	var conds any
	if last != nil {
		conds = conditions(last)
	}
	return nil, fmt.Errorf("workload of job %s: %s: not within 1m (conditions %v)", job.Name, what, conds)
}

func waitJob(env *testenv.Env, job *batchv1.Job, what string, ok func(*batchv1.Job) bool) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		j, err := env.Client.BatchV1().Jobs(job.Namespace).Get(context.Background(), job.Name, metav1.GetOptions{})
		if err == nil && ok(j) {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("job %s: %s: not within 1m", job.Name, what)
}

func conditions(w *unstructured.Unstructured) []any {
	c, _, _ := unstructured.NestedSlice(w.Object, "status", "conditions")
	return c
}

func condition(w *unstructured.Unstructured, typ string) string {
	for _, c := range conditions(w) {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

func checkState(w *unstructured.Unstructured, name string) string {
	checks, _, _ := unstructured.NestedSlice(w.Object, "status", "admissionChecks")
	for _, c := range checks {
		if m, ok := c.(map[string]any); ok && m["name"] == name {
			s, _ := m["state"].(string)
			return s
		}
	}
	return ""
}

// markCheckActive sets the AdmissionCheck's Active condition, as the check's
// controller does when it is ready to judge workloads.
func markCheckActive(env *testenv.Env, name string) error {
	return retryConflicts(func() error {
		ri := env.Dynamic.Resource(gvr("admissionchecks"))
		ac, err := ri.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		_ = unstructured.SetNestedSlice(ac.Object, []any{map[string]any{
			"type": "Active", "status": "True", "reason": "Active", "message": "the test's stand-in controller is ready",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		}}, "status", "conditions")
		_, err = ri.UpdateStatus(context.Background(), ac, metav1.UpdateOptions{FieldManager: "manual-approval-controller"})
		return err
	})
}

// approve sets the check's state on the Job's Workload to Ready, as the
// check's controller does when the workload passes.
func approve(env *testenv.Env, job *batchv1.Job, check string) error {
	return retryConflicts(func() error {
		list, err := env.Dynamic.Resource(gvr("workloads")).Namespace(job.Namespace).List(context.Background(),
			metav1.ListOptions{LabelSelector: "kueue.x-k8s.io/job-uid=" + string(job.UID)})
		if err != nil || len(list.Items) != 1 {
			return fmt.Errorf("workload of job %s: %v", job.Name, err)
		}
		w := &list.Items[0]
		checks, _, _ := unstructured.NestedSlice(w.Object, "status", "admissionChecks")
		for i, c := range checks {
			if m, ok := c.(map[string]any); ok && m["name"] == check {
				m["state"] = "Ready"
				m["message"] = "approved by the test"
				m["lastTransitionTime"] = time.Now().UTC().Format(time.RFC3339)
				checks[i] = m
			}
		}
		_ = unstructured.SetNestedSlice(w.Object, checks, "status", "admissionChecks")
		_, err = env.Dynamic.Resource(gvr("workloads")).Namespace(job.Namespace).UpdateStatus(context.Background(), w, metav1.UpdateOptions{FieldManager: "manual-approval-controller"})
		return err
	})
}

func retryConflicts(f func() error) error {
	var err error
	for range 10 {
		if err = f(); err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return err
}
