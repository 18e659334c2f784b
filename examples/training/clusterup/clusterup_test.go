// Package clusterup_test applies examples/training as a user does on
// `make cluster-up`: a cluster of three 8-GPU nodes with testenv's pod runner
// and no controller installed, the example installing Kueue, JobSet and
// Kubeflow Trainer itself (install_controllers, the default), from the
// charts in the Go module cache (offline).
package clusterup_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// The cluster `make cluster-up` starts (`testenv up --pod-runner`): three
// nodes of 8 x H100 (no CPU nodes: the controllers' pods run there too), the
// pod runner running whatever controller's chart gets installed.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{
		PodRunner: true,
		Nodes:     []testenv.NodePool{{Name: "gpu", Count: 3, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", GPUMemory: "81559"}},
	})
}

var trainJobs = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"}

// chartDir is a chart of a module in the module cache.
func chartDir(t *testing.T, module, version, dir string) string {
	t.Helper()
	root, err := testenv.ModuleDir(context.Background(), module, version)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, dir)
}

// One `terraform apply` of the whole example on an empty cluster: the three
// installs, then the queue, the store and the runtime that need them; an
// empty plan after it; a TrainJob of the runtime gets its two pods running.
// Logs the time from the start of the apply to those pods running,
// installs included.
func TestAccTrainingExampleOnAnEmptyCluster(t *testing.T) {
	env := acctest.Env(t)
	start := time.Now()
	w := acctest.NewWorkspace(t, env, "..")
	w.Env = append(w.Env,
		"TF_VAR_kueue_chart_path="+chartDir(t, "sigs.k8s.io/kueue", "v0.17.0", "charts/kueue"),
		"TF_VAR_jobset_chart_path="+chartDir(t, "sigs.k8s.io/jobset", "v0.12.0", "charts/jobset"),
		"TF_VAR_trainer_chart_path="+chartDir(t, "github.com/kubeflow/trainer/v2", "v2.3.0", "charts/kubeflow-trainer"))
	out, err := w.Run("apply", "-auto-approve")
	if err != nil {
		t.Fatal(err)
	}
	if warned := warnings(out); len(warned) > 0 {
		t.Logf("the apply warned: %q", warned)
	}
	applied := time.Since(start)
	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan -detailed-exitcode after apply exited %d, want 0:\n%s", code, out)
	}

	ctx := context.Background()
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
		"metadata": map[string]any{"name": "first", "namespace": "default", "labels": map[string]any{
			"kueue.x-k8s.io/queue-name": "training", "kueue.x-k8s.io/priority-class": "training-long"}},
		"spec": map[string]any{
			"runtimeRef": map[string]any{"name": "torch-h100", "kind": "TrainingRuntime"},
			"runtimePatches": []any{map[string]any{
				"manager": "examples.aiplatform.dev/test",
				"trainingRuntimeSpec": map[string]any{"template": map[string]any{"spec": map[string]any{
					"replicatedJobs": []any{map[string]any{"name": "node", "template": map[string]any{"spec": map[string]any{"template": map[string]any{
						"metadata": map[string]any{"annotations": map[string]any{testenv.PodCompleteDelayAnnotation: "24h"}},
					}}}}},
				}}},
			}},
		},
	}}
	submitted := time.Now()
	if _, err := env.Dynamic.Resource(trainJobs).Namespace("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		policy := metav1.DeletePropagationBackground
		_ = env.Dynamic.Resource(trainJobs).Namespace("default").Delete(context.Background(), "first", metav1.DeleteOptions{PropagationPolicy: &policy})
	})
	running := 0
	for deadline := time.Now().Add(3 * time.Minute); running != 2; time.Sleep(200 * time.Millisecond) {
		pods, err := env.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=first"})
		if err != nil {
			t.Fatal(err)
		}
		running = 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("TrainJob first: %d of 2 pods running after 3m", running)
		}
	}
	t.Logf("TIMING (empty cluster, installs included): terraform apply %s; TrainJob submitted → 2 pods Running %s; terraform apply start → TrainJob pods Running %s",
		applied.Round(100*time.Millisecond), time.Since(submitted).Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
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
