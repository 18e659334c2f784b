// Package training_test applies examples/training with the terraform CLI and
// judges it with the real controllers: Kueue admits a TrainJob of the
// example's runtime as one gang, a short high-priority job preempts it, and
// it comes back on the same checkpoint claim.
package training_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

const h100 = "NVIDIA-H100-80GB-HBM3"

// The cluster the example describes: one pool of two 8 x H100 nodes (the
// runtime's 2 x 8-GPU gang fills it), and a CPU node for the controllers.
// JobSet, Trainer and Kueue run from their charts, their controllers run by
// the pod runner; Kueue starts last (its TrainJob integration needs Trainer's
// CRDs when it starts) with the integrations this path needs: TrainJobs
// (trainer.kubeflow.org/trainjob) and the short Jobs that preempt them
// (batch/job). The example's own installs are off here
// (install_controllers=false): these are the same charts, already installed.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{
		Nodes: []testenv.NodePool{
			{Name: "h100", Count: 2, GPUs: 8, Product: h100, GPUMemory: "81559", CPU: "64", Memory: "512Gi"},
			{Name: "system", Count: 1},
		},
		Controllers: []testenv.Controller{
			testenv.ControllerOf(podrunner.JobSet),
			testenv.ControllerOf(podrunner.Trainer),
			testenv.Kueue("batch/job", "trainer.kubeflow.org/trainjob"),
		},
	})
}

var trainingRuntimes = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainingruntimes"}

// platform is what the applied example offers a data scientist.
type platform struct {
	Namespace, Queue, Runtime, Claim, MountPath string
	Applied                                     time.Time // when `terraform apply` started
}

// The judged scenario of examples/training (issue #13): `terraform apply` of
// the example with the terraform CLI, `plan -detailed-exitcode` exiting 0,
// then TrainJobs of its runtime judged by Kueue, Trainer and JobSet, and the
// plan still empty after them (jobs that run, are preempted or fail are not
// drift).
func TestAccTrainingExample(t *testing.T) {
	env := acctest.Env(t)
	start := time.Now()
	w := acctest.NewWorkspace(t, env, ".")
	w.Env = append(w.Env, "TF_VAR_install_controllers=false")
	out, err := w.Run("apply", "-auto-approve")
	if err != nil {
		t.Fatal(err)
	}
	if warned := warnings(out); len(warned) > 0 {
		t.Logf("the apply warned: %q", warned)
	}
	t.Logf("TIMING: terraform apply of examples/training took %s", time.Since(start).Round(100*time.Millisecond))
	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan -detailed-exitcode after apply exited %d, want 0:\n%s", code, out)
	}
	clusterQueuesActive(t, env)

	outs := w.Outputs()
	runtime, _ := outs["runtime"].(map[string]any)
	name, _ := runtime["name"].(string)
	claim, _ := outs["checkpoint_claim"].(string)
	if name == "" || claim == "" || runtime["kind"] != "TrainingRuntime" || runtime["gpus_total"] != float64(16) {
		t.Fatalf("outputs: runtime %v, checkpoint_claim %q: want a TrainingRuntime of 16 GPUs and a claim", runtime, claim)
	}
	p := platform{Namespace: "default", Queue: "training", Runtime: name, Claim: claim, MountPath: "/checkpoints", Applied: start}
	live, err := env.Dynamic.Resource(trainingRuntimes).Namespace(p.Namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the runtime %s/%s: %v", p.Namespace, name, err)
	}
	if n, _, _ := unstructured.NestedInt64(live.Object, "spec", "mlPolicy", "numNodes"); n != 2 {
		t.Errorf("runtime %s: mlPolicy.numNodes = %d, want 2", name, n)
	}

	t.Run("preempted training resumes on the same checkpoint claim", p.survivesPreemption)
	t.Run("a failing gang is restarted at most max_restarts times", p.boundedRetries)
	t.Run("the guide's TrainJob runs as written", p.guideTrainJob)

	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan -detailed-exitcode after the jobs exited %d, want 0:\n%s", code, out)
	}
}

// survivesPreemption:
//
//  1. a long, low-priority TrainJob naming the runtime is admitted as one
//     gang (the Workload's admission covers both pods) and both pods run,
//     each mounting the checkpoint claim; the time from the start of the
//     apply to these pods running is logged;
//  2. a checkpoint is written into the claim's volume;
//  3. a short, high-priority Job (8 GPUs) preempts it: the TrainJob is
//     suspended and its pods are gone; while the short job runs, the
//     TrainJob holds no pod at all, though 8 of its 16 GPUs are free (gang);
//  4. once the short job has completed, the TrainJob is re-admitted, its new
//     pods mount the same claim, bound to the same volume, the checkpoint is
//     still there, and the preemption used none of the JobSet's restarts.
func (p platform) survivesPreemption(t *testing.T) {
	env := acctest.Env(t)
	job := acctest.QueuedTrainJob{Namespace: p.Namespace, Name: "llm-pretrain", Runtime: p.Runtime, Queue: p.Queue, Priority: "training-long"}
	submitted := time.Now()
	job.Submit(t, env)
	first := job.Eventually(t, env, "admitted as one gang, both pods running", 3*time.Minute, func(s acctest.TrainJobState) bool {
		return !s.Suspended && s.Admitted == 2 && len(s.Pods) == 2 && s.Running == 2
	})
	t.Logf("TIMING: TrainJob submitted → 2 pods Running %s; terraform apply start → TrainJob pods Running %s",
		time.Since(submitted).Round(100*time.Millisecond), time.Since(p.Applied).Round(100*time.Millisecond))
	checkMountsClaim(t, first.Pods, p.Claim, p.MountPath, "CHECKPOINT_DIR")

	volume, dir := claimDir(t, env, p.Namespace, p.Claim)
	path, content := writeCheckpoint(t, dir, 500)
	t.Logf("checkpoint written to claim %s (volume %s): %s", p.Claim, volume, path)

	short := acctest.Job{Namespace: p.Namespace, Name: "eval-short", Queue: p.Queue, Priority: "short", Pods: 1, GPUsPerPod: 8, RunFor: 20 * time.Second}
	short.Submit(t, env)
	job.Eventually(t, env, "preempted: suspended, pods gone", time.Minute, func(s acctest.TrainJobState) bool {
		return s.Suspended && len(s.Pods) == 0 && s.Evictions > 0
	})
	// Until the short job completes, 8 of the queue's 16 GPUs are free: not
	// enough for the gang, so the TrainJob must hold no pod at all.
	sawShortRunning := false
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		st, err := short.Observe(env)
		if err != nil {
			t.Fatal(err)
		}
		if st.Complete {
			break
		}
		sawShortRunning = sawShortRunning || (!st.Suspended && st.Pods > 0 && st.Scheduled == st.Pods)
		if s, err := job.Observe(env); err != nil || !s.Suspended || len(s.Pods) != 0 {
			t.Fatalf("while the short job runs (%+v), the TrainJob is %s (err %v): want suspended with no pods", st, s, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the short job did not complete within 2m: %+v", st)
		}
	}
	if !sawShortRunning {
		t.Error("the short job was never seen running")
	}

	again := job.Eventually(t, env, "re-admitted after the short job, both pods running", 3*time.Minute, func(s acctest.TrainJobState) bool {
		return !s.Suspended && s.Admitted == 2 && len(s.Pods) == 2 && s.Running == 2
	})
	if old, now := podUIDs(first.Pods), podUIDs(again.Pods); slices.ContainsFunc(now, func(uid string) bool { return slices.Contains(old, uid) }) {
		t.Errorf("the re-admitted TrainJob runs pods of its first admission (%v, then %v): want new pods", old, now)
	}
	checkMountsClaim(t, again.Pods, p.Claim, p.MountPath, "CHECKPOINT_DIR")
	// Preemption suspends the group; it is not a failure, and uses none of
	// the restarts failure_policy.max_restarts allows.
	if n := jobSetRestarts(t, env, job); n != 0 {
		t.Errorf("after preemption the JobSet counts %d restarts, want 0", n)
	}
	if v, d := claimDir(t, env, p.Namespace, p.Claim); v != volume || d != dir {
		t.Errorf("claim %s is bound to %s (%s) after preemption, was %s (%s)", p.Claim, v, d, volume, dir)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, content) {
		t.Errorf("the checkpoint %s after preemption: %q, %v; want %q", path, got, err, content)
	}
	if latest, err := os.ReadFile(filepath.Join(dir, "latest")); err != nil || string(latest) != "step-000500" {
		t.Errorf("the latest pointer after preemption: %q, %v", latest, err)
	}
}

// boundedRetries: a TrainJob whose ranks fail (kwok fails each pod a second
// after it runs, as a CUDA error would) is restarted as a whole group by
// JobSet, max_restarts = 3 times, then fails, and Kueue frees its 16 GPUs:
// a 16-GPU job of the same queue is admitted afterwards.
func (p platform) boundedRetries(t *testing.T) {
	env := acctest.Env(t)
	job := acctest.QueuedTrainJob{Namespace: p.Namespace, Name: "oom-at-step", Runtime: p.Runtime, Queue: p.Queue, Priority: "training-long",
		PodAnnotations: map[string]string{testenv.PodCompleteDelayAnnotation: "1s", testenv.PodFailAnnotation: "CUDA error: out of memory"}}
	job.Submit(t, env)
	waitFor(t, 3*time.Minute, "TrainJob oom-at-step Failed", func() bool { return trainJobCondition(t, env, job, "Failed") })
	if n := jobSetRestarts(t, env, job); n != 3 {
		t.Errorf("the failed JobSet counts %d restarts, want 3 (failure_policy.max_restarts)", n)
	}
	next := acctest.QueuedTrainJob{Namespace: p.Namespace, Name: "after-oom", Runtime: p.Runtime, Queue: p.Queue, Priority: "training-long"}
	next.Submit(t, env)
	next.Eventually(t, env, "admitted once the failed job has released its GPUs", 2*time.Minute, func(s acctest.TrainJobState) bool {
		return !s.Suspended && s.Admitted == 2 && s.Running == 2
	})
}

// warnings are the titles of the warnings terraform printed, but the one
// about the provider's development override every test run has.
func warnings(out string) []string {
	var titles []string
	for _, line := range strings.Split(out, "\n") {
		if t, ok := strings.CutPrefix(strings.TrimSpace(line), "Warning: "); ok && !strings.HasPrefix(t, "Provider development overrides") {
			titles = append(titles, t)
		}
	}
	return titles
}
