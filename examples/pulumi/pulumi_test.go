// Package pulumi_test runs the Pulumi programs of examples/pulumi with the
// real Pulumi CLI and YAML language host against the bridged provider
// (pulumi/), on a local cluster whose controllers judge them as they judge
// the Terraform examples.
package pulumi_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

const h100 = "NVIDIA-H100-80GB-HBM3"

// An empty cluster with the pool the training program describes (two 8 x
// H100 nodes) and a CPU node for the controllers. The program installs
// Kueue, JobSet and Trainer from their charts in the module cache; the pod
// runner runs their controllers.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{PodRunner: true, Nodes: []testenv.NodePool{
		{Name: "h100", Count: 2, GPUs: 8, Product: h100, GPUMemory: "81559", CPU: "64", Memory: "512Gi"},
		{Name: "system", Count: 1},
	}})
}

var clusterQueues = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}

// The whole path of a Pulumi user, in order, on one cluster: the training
// platform refused at preview and then created in one `pulumi up`, judged by
// Kueue, JobSet and Trainer; drift repaired; the quickstart's walkthrough
// on the Kueue it installed; a live ClusterQueue imported; and destroy.
func TestAccPulumiPrograms(t *testing.T) {
	env := acctest.Env(t)
	training := newStack(t, env, "training")
	for key, dir := range map[string]string{
		"kueueChart":   acctest.KueueChartAt(t, "v0.17.0"),
		"jobsetChart":  acctest.JobSetChartAt(t, "v0.12.0"),
		"trainerChart": acctest.TrainerChartAt(t, "v2.3.0"),
	} {
		training.must(t, "config", "set", "--path", key+".path", dir)
	}

	t.Run("a gang bigger than its queue fails the preview and creates nothing", func(t *testing.T) {
		training.must(t, "config", "set", "numNodes", "3")
		defer training.must(t, "config", "set", "numNodes", "2")
		out := training.fails(t, "preview")
		if !strings.Contains(out, "The gang exceeds the queue's quota") {
			t.Fatalf("pulumi preview failed without the gang's diagnostic:\n%s", out)
		}
		out = training.fails(t, "up", "--yes")
		if !strings.Contains(out, "The gang exceeds the queue's quota") {
			t.Fatalf("pulumi up failed without the gang's diagnostic:\n%s", out)
		}
		nothingCreated(t, env)
	})

	t.Run("the training platform in one pulumi up, judged by the controllers", func(t *testing.T) {
		start := time.Now()
		training.must(t, "up", "--yes")
		t.Logf("TIMING: pulumi up of examples/pulumi/training took %s", time.Since(start).Round(100*time.Millisecond))
		training.must(t, "preview", "--expect-no-changes")
		job := acctest.QueuedTrainJob{Namespace: "default", Name: "llm-pretrain", Runtime: "torch-h100", Queue: "training", Priority: "training-long"}
		job.Submit(t, env)
		job.Eventually(t, env, "admitted as one gang, both pods running", 3*time.Minute, func(s acctest.TrainJobState) bool {
			return !s.Suspended && s.Admitted == 2 && len(s.Pods) == 2 && s.Running == 2
		})
		// A running job is not drift.
		training.must(t, "preview", "--refresh", "--expect-no-changes")
	})

	t.Run("a hand edit shows in preview --refresh; up --refresh repairs it with forceConflicts", func(t *testing.T) {
		// As the Terraform path (docs/guides): the preview shows the
		// repair and warns naming the editor's field manager; a plain up
		// is refused and changes nothing; with forceConflicts it repairs.
		queue := acctest.NewObject("kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "training")
		queue.Edit(t, env, "kubectl-edit", func(obj map[string]any) {
			if err := unstructured.SetNestedField(obj, "Never", "spec", "preemption", "withinClusterQueue"); err != nil {
				t.Fatal(err)
			}
		})
		out := training.fails(t, "preview", "--refresh", "--expect-no-changes", "--diff")
		if !strings.Contains(out, `withinClusterQueue: "Never" => "LowerPriority"`) || !strings.Contains(out, `conflict with "kubectl-edit"`) {
			t.Fatalf("preview --refresh after the hand edit: want the repair of withinClusterQueue and a warning naming kubectl-edit:\n%s", out)
		}
		if out := training.fails(t, "up", "--refresh", "--yes"); !strings.Contains(out, `conflict with "kubectl-edit"`) {
			t.Fatalf("up --refresh after the hand edit: want a refusal naming kubectl-edit:\n%s", out)
		}
		if got := preemption(t, env, "training"); got != "Never" {
			t.Fatalf("the refused up changed withinClusterQueue to %q", got)
		}
		training.must(t, "config", "set", "aiplatform:forceConflicts", "true")
		training.must(t, "up", "--refresh", "--yes")
		if got := preemption(t, env, "training"); got != "LowerPriority" {
			t.Fatalf("after up --refresh with forceConflicts, withinClusterQueue = %q, want LowerPriority", got)
		}
		training.must(t, "config", "rm", "aiplatform:forceConflicts")
		training.must(t, "up", "--yes")
		training.must(t, "preview", "--refresh", "--expect-no-changes")
	})

	quickstart := newStack(t, env, "quickstart")
	t.Run("the quickstart's walkthrough: Kueue admits one Job and holds the other", func(t *testing.T) {
		quickstart.must(t, "up", "--yes")
		quickstart.must(t, "preview", "--expect-no-changes")
		first := acctest.Job{Namespace: "default", Name: "walkthrough-1", Queue: "gpu-local-queue", GPUsPerPod: 1, RunFor: 6 * time.Second}
		second := acctest.Job{Namespace: "default", Name: "walkthrough-2", Queue: "gpu-local-queue", GPUsPerPod: 1, RunFor: time.Second}
		first.Submit(t, env)
		first.Eventually(t, env, "admitted, pod scheduled", 30*time.Second, func(s acctest.State) bool { return !s.Suspended && s.Pods > 0 && s.Scheduled == s.Pods })
		second.Submit(t, env)
		second.Consistently(t, env, "held suspended with 0 pods while the quota is used", 3*time.Second, func(s acctest.State) bool { return s.Suspended && s.Pods == 0 })
		first.Eventually(t, env, "complete", 30*time.Second, func(s acctest.State) bool { return s.Complete })
		second.Eventually(t, env, "admitted after the first finished", 30*time.Second, func(s acctest.State) bool { return !s.Suspended })
	})

	t.Run("pulumi import of a live ClusterQueue", func(t *testing.T) {
		// The stack forgets the queue and the LocalQueue that refers to it
		// (both stay in the cluster); import adopts the live ones under the
		// program's names, and the program then has nothing to change:
		// every attribute was read back.
		quickstart.must(t, "state", "delete", "urn:pulumi:test::aiplatform-quickstart::aiplatform:index/clusterQueue:ClusterQueue::clusterQueue", "--yes", "--target-dependents")
		if out := quickstart.must(t, "preview", "--diff"); !strings.Contains(out, "+ 2 to create") {
			t.Fatalf("preview after forgetting the queues: want 2 to create:\n%s", out)
		}
		quickstart.must(t, "import", "aiplatform:index/clusterQueue:ClusterQueue", "clusterQueue", "cluster-queue", "--yes", "--protect=false")
		quickstart.must(t, "import", "aiplatform:index/localQueue:LocalQueue", "localQueue", "default/gpu-local-queue", "--yes", "--protect=false")
		quickstart.must(t, "preview", "--expect-no-changes")
	})

	t.Run("destroy keeps the checkpoint claim", func(t *testing.T) {
		quickstart.must(t, "destroy", "--yes")
		training.must(t, "destroy", "--yes")
		if _, err := env.Client.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "llm-checkpoints", metav1.GetOptions{}); err != nil {
			t.Fatalf("the checkpoint claim after pulumi destroy: %v (destroy keeps it)", err)
		}
		for _, q := range []string{"training", "cluster-queue"} {
			if _, err := env.Dynamic.Resource(clusterQueues).Get(context.Background(), q, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("ClusterQueue %s after pulumi destroy: %v, want NotFound", q, err)
			}
		}
	})

	t.Run("the README's program, with the plugin installed from an archive laid out as the release's", func(t *testing.T) {
		// No plugin on PATH: Pulumi takes the one `pulumi plugin install
		// --file` put in the stack's PULUMI_HOME, from a .tar.gz holding the
		// binary at its root (what internal/release checks of the release's).
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), readmeProgram(t), 0o644); err != nil {
			t.Fatal(err)
		}
		readme := newStackOn(t, env, dir)
		readme.must(t, "plugin", "install", "resource", "aiplatform", "v0.0.1", "--file", pluginArchive(t))
		readme.must(t, "up", "--yes")
		readme.must(t, "preview", "--expect-no-changes")
		if _, err := env.Dynamic.Resource(clusterQueues).Get(context.Background(), "cluster-queue", metav1.GetOptions{}); err != nil {
			t.Fatalf("the README program's ClusterQueue: %v", err)
		}
		readme.must(t, "destroy", "--yes")
	})
}

// readmeProgram is the Pulumi YAML program of README.md's Pulumi section
// (its first yaml block).
func readmeProgram(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(b), "\n## Pulumi\n")
	_, block, ok := strings.Cut(section, "```yaml\n")
	block, _, closed := strings.Cut(block, "```")
	if !ok || !closed || !strings.Contains(block, "runtime: yaml") {
		t.Fatal("README.md: no Pulumi YAML program in its Pulumi section")
	}
	return []byte(block)
}

// pluginArchive packs the built plugin as the release does: the binary
// alone at the archive's root.
func pluginArchive(t *testing.T) string {
	t.Helper()
	bin, err := os.ReadFile(filepath.Join(pulumiBin(t).Plugin, "pulumi-resource-aiplatform"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pulumi-resource-aiplatform-v0.0.1-linux-amd64.tar.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: "pulumi-resource-aiplatform", Mode: 0o755, Size: int64(len(bin)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(bin); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// nothingCreated fails the test if any object of the training program is in
// the cluster.
func nothingCreated(t *testing.T, env *testenv.Env) {
	t.Helper()
	ctx := context.Background()
	deployments, err := env.Client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deployments.Items {
		t.Errorf("Deployment %s/%s exists after a refused preview", d.Namespace, d.Name)
	}
	if _, err := env.Client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "llm-checkpoints", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the checkpoint claim after a refused preview: %v, want NotFound", err)
	}
	nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "example.com/pool"})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) > 0 {
		t.Errorf("%d nodes carry the pool's label after a refused preview", len(nodes.Items))
	}
}

// preemption is a ClusterQueue's live spec.preemption.withinClusterQueue.
func preemption(t *testing.T, env *testenv.Env, name string) string {
	t.Helper()
	q, err := env.Dynamic.Resource(clusterQueues).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, _, _ := unstructured.NestedString(q.Object, "spec", "preemption", "withinClusterQueue")
	return v
}
