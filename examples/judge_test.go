package examples_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

var clusterQueues = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}

// clusterQueuesActive waits until every ClusterQueue in the cluster reports
// condition Active=True.
func clusterQueuesActive(env *testenv.Env) resource.TestCheckFunc {
	return func(*terraform.State) error {
		deadline := time.Now().Add(30 * time.Second)
		for {
			list, err := env.Dynamic.Resource(clusterQueues).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				return err
			}
			inactive := ""
			for _, q := range list.Items {
				if !conditionTrue(q.Object, "Active") {
					inactive += " " + q.GetName()
				}
			}
			if inactive == "" && len(list.Items) > 0 {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("ClusterQueues not Active after 30s:%s (%d queues)", inactive, len(list.Items))
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
}

func conditionTrue(obj map[string]any, condition string) bool {
	conds, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == condition && m["status"] == "True" {
			return true
		}
	}
	return false
}

// scenario applies an example directory with the CLI, checks that
// `plan -detailed-exitcode` then exits 0 and that Kueue made every
// ClusterQueue Active, and runs judge while the example is in place.
func scenario(t *testing.T, env *testenv.Env, cli acctest.CLI, dir string, judge func(t *testing.T)) {
	w := acctest.NewWorkspaceFor(t, env, dir, cli)
	if _, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatal(err)
	}
	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan -detailed-exitcode after apply exited %d, want 0:\n%s", code, out)
	}
	if err := clusterQueuesActive(env)(nil); err != nil {
		t.Fatal(err)
	}
	if judge != nil {
		judge(t)
	}
}

// judged runs scenario under each CLI (subtests terraform, tofu); the judge's
// Jobs carry the CLI's name so that one run's Jobs, deleted in the
// background, never meet the next run's.
func judged(t *testing.T, env *testenv.Env, dir string, judge func(t *testing.T, cli acctest.CLI)) {
	acctest.ForEachCLI(t, func(t *testing.T, cli acctest.CLI) {
		scenario(t, env, cli, dir, func(t *testing.T) { judge(t, cli) })
	})
}

func suspended(s acctest.State) bool { return s.Suspended && s.Pods == 0 }
func running(s acctest.State) bool   { return !s.Suspended && s.Pods > 0 && s.Scheduled == s.Pods }
func complete(s acctest.State) bool  { return s.Complete }

// The classic walkthrough on examples/quickstart: a ClusterQueue with one GPU,
// two 1-GPU Jobs. Kueue admits the first, holds the second suspended with no
// pods, and admits it once the first has finished.
func TestAccQuickstartWalkthrough(t *testing.T) {
	env := acctest.Env(t)
	judged(t, env, "quickstart", func(t *testing.T, cli acctest.CLI) {
		first := acctest.Job{Namespace: "default", Name: "walkthrough-1-" + cli.Name, Queue: "gpu-local-queue", GPUsPerPod: 1, RunFor: 6 * time.Second}
		second := acctest.Job{Namespace: "default", Name: "walkthrough-2-" + cli.Name, Queue: "gpu-local-queue", GPUsPerPod: 1, RunFor: time.Second}
		first.Submit(t, env)
		first.Eventually(t, env, "admitted, pod scheduled", 20*time.Second, running)
		second.Submit(t, env)
		second.Consistently(t, env, "held suspended with 0 pods while the quota is used", 3*time.Second, suspended)
		first.Eventually(t, env, "complete", 30*time.Second, complete)
		second.Eventually(t, env, "admitted after the first finished", 20*time.Second, func(s acctest.State) bool { return !s.Suspended })
		second.Eventually(t, env, "complete", 30*time.Second, complete)
	})
}

// examples/teams: batch borrows production's idle H100s through the cohort,
// then yields them when production needs its quota back.
func TestAccTeamsBorrowAndReclaim(t *testing.T) {
	env := acctest.Env(t)
	judged(t, env, "teams", func(t *testing.T, cli acctest.CLI) {
		// batch's H100 quota is 8 (a quarter of 32); 3 pods x 8 GPUs = 24
		// fits only by borrowing research's and production's idle H100s.
		batch := acctest.Job{Namespace: "default", Name: "batch-big-" + cli.Name, Queue: "batch", Priority: "batch", Pods: 3, GPUsPerPod: 8, RunFor: 10 * time.Minute}
		batch.Submit(t, env)
		batch.Eventually(t, env, "admitted by borrowing idle quota", 20*time.Second, running)

		// production's own 16 H100s: only 8 are free, the rest is lent to
		// batch, so Kueue reclaims them (reclaim_within_cohort = "Any") by
		// evicting the batch job.
		prod := acctest.Job{Namespace: "default", Name: "prod-serve-" + cli.Name, Queue: "production", Priority: "production", Pods: 2, GPUsPerPod: 8, RunFor: 10 * time.Minute}
		prod.Submit(t, env)
		// Kueue evicts it; its Workload records the eviction. The job is not
		// necessarily left suspended: seen here, Kueue re-admits it at once
		// while production runs, its 3 new pods unschedulable — batch's flavor
		// fungibility (TryNextFlavor) can place it on the A100 flavor, whose
		// quota holds 24 GPUs in all but whose 4-GPU nodes cannot take an
		// 8-GPU pod (Kueue admits by quota, not by node fit). A poll for the
		// suspension alone misses that (it failed 4 of 6 runs).
		batch.Eventually(t, env, "evicted", 30*time.Second, func(s acctest.State) bool { return s.Evictions > 0 })
		prod.Eventually(t, env, "admitted with its reclaimed quota", 30*time.Second, running)
	})
}

// Preemption within one queue by priority (within_cluster_queue =
// "LowerPriority"): a low-priority job holding all of the queue's GPUs is
// evicted when a high-priority one arrives.
func TestAccPreemptionByPriority(t *testing.T) {
	env := acctest.Env(t)
	judged(t, env, "testdata/preemption", func(t *testing.T, cli acctest.CLI) {
		low := acctest.Job{Namespace: "default", Name: "solo-low-" + cli.Name, Queue: "solo", Priority: "low", GPUsPerPod: 8, RunFor: 10 * time.Minute}
		low.Submit(t, env)
		low.Eventually(t, env, "admitted", 20*time.Second, running)
		high := acctest.Job{Namespace: "default", Name: "solo-high-" + cli.Name, Queue: "solo", Priority: "high", GPUsPerPod: 8, RunFor: 10 * time.Minute}
		high.Submit(t, env)
		low.Eventually(t, env, "evicted (suspended again)", 30*time.Second, func(s acctest.State) bool { return s.Suspended })
		high.Eventually(t, env, "admitted in its place", 30*time.Second, running)
	})
}

// The Kueue manager is down while queues are applied: its webhooks
// (failurePolicy Fail) cannot answer, and the error says so instead of a
// bare 500. With the manager back, the same apply goes through.
func TestAccKueueWebhookDown(t *testing.T) {
	env := acctest.Env(t)
	if env.External {
		t.Skip("stops the Kueue manager testenv started")
	}
	if err := env.StopController(context.Background(), "kueue"); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = env.StartController(context.Background(), "kueue")
		}
	})
	cfg := acctest.Provider(env) + `
resource "aiplatform_resource_flavor" "wd" {
  name = "webhook-down"
}
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{Config: cfg, ExpectError: acctest.ErrorMatching("an admission webhook for this object is unreachable or failing (is its controller running?)", "failed calling webhook")},
			{
				PreConfig: func() {
					if err := env.StartController(context.Background(), "kueue"); err != nil {
						t.Fatal(err)
					}
					restarted = true
				},
				Config: cfg,
			},
		},
	})
}
