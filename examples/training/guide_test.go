package training_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// guidePage is the guide whose TrainJob the example's platform runs as
// written (examples/docs_test.go holds every block of docs/ to a test).
const guidePage = "docs/guides/training-survives-preemption.md"

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)\n```")

// guideTrainJob: the TrainJob docs/guides/training-survives-preemption.md
// shows, submitted as it is written to the platform the example applied
// (its runtime, queue, priority and namespace are the example's). As the
// guide says: Kueue admits both pods, and Trainer injects the torch
// rendezvous into each (PET_NNODES = 2, PET_NODE_RANK from the Job's
// completion index, PET_MASTER_ADDR the first pod, PET_MASTER_PORT), which
// it does only because the TrainJob has a spec.trainer.
func (p platform) guideTrainJob(t *testing.T) {
	env := acctest.Env(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(guidePage)))
	if err != nil {
		t.Fatalf("%v (run make generate)", err)
	}
	var obj *unstructured.Unstructured
	for _, m := range yamlBlock.FindAllSubmatch(page, -1) {
		// As JSON into an Unstructured: numbers become int64, as the API
		// server's decoding makes them.
		j, err := yaml.YAMLToJSON(m[1])
		o := &unstructured.Unstructured{}
		if err == nil {
			err = o.UnmarshalJSON(j)
		}
		if err != nil {
			t.Fatalf("a yaml block of %s is not a Kubernetes object: %v\n%s", guidePage, err, m[1])
		}
		if o.GetKind() == "TrainJob" {
			if obj != nil {
				t.Fatalf("%s shows more than one TrainJob: the test runs one", guidePage)
			}
			obj = o
		}
	}
	if obj == nil {
		t.Fatalf("%s shows no TrainJob", guidePage)
	}
	runtime, _, _ := unstructured.NestedString(obj.Object, "spec", "runtimeRef", "name")
	if obj.GetNamespace() != p.Namespace || runtime != p.Runtime || obj.GetLabels()["kueue.x-k8s.io/queue-name"] != p.Queue {
		t.Fatalf("the guide's TrainJob names namespace %q, runtime %q, queue %q; the example has %q, %q, %q",
			obj.GetNamespace(), runtime, obj.GetLabels()["kueue.x-k8s.io/queue-name"], p.Namespace, p.Runtime, p.Queue)
	}
	nodes, _, _ := unstructured.NestedInt64(obj.Object, "spec", "trainer", "numNodes")
	if nodes != 2 {
		t.Fatalf("the guide's TrainJob has spec.trainer.numNodes %d, want 2 (the guide says to keep the trainer block)", nodes)
	}

	ctx := context.Background()
	job := acctest.QueuedTrainJob{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	// The preemption scenario's TrainJob of the same name may still be
	// going away; a webhook that just started may refuse once.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
		_, err = env.Dynamic.Resource(trainJobs).Namespace(job.Namespace).Create(ctx, obj.DeepCopy(), metav1.CreateOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("submitting the guide's TrainJob %s: %v", job.Name, err)
		}
	}
	t.Cleanup(func() {
		policy := metav1.DeletePropagationBackground
		_ = env.Dynamic.Resource(trainJobs).Namespace(job.Namespace).Delete(context.Background(), job.Name, metav1.DeleteOptions{PropagationPolicy: &policy})
	})
	st := job.Eventually(t, env, "admitted as one gang with its 2 pods", 3*time.Minute, func(s acctest.TrainJobState) bool {
		return !s.Suspended && s.Admitted == 2 && len(s.Pods) == 2
	})
	master := job.Name + "-node-0-0." + job.Name
	for _, pod := range st.Pods {
		vars := map[string]corev1.EnvVar{}
		for _, c := range pod.Spec.Containers {
			if c.Name == "node" {
				for _, e := range c.Env {
					vars[e.Name] = e
				}
			}
		}
		for name, want := range map[string]string{"PET_NNODES": "2", "PET_MASTER_ADDR": master, "PET_MASTER_PORT": "29500"} {
			if vars[name].Value != want {
				t.Errorf("pod %s of the guide's TrainJob: %s=%q, want %q", pod.Name, name, vars[name].Value, want)
			}
		}
		if rank := vars["PET_NODE_RANK"].ValueFrom; rank == nil || rank.FieldRef == nil || !strings.Contains(rank.FieldRef.FieldPath, "job-completion-index") {
			t.Errorf("pod %s of the guide's TrainJob: PET_NODE_RANK is not the Job's completion index: %+v", pod.Name, vars["PET_NODE_RANK"])
		}
	}
	if t.Failed() {
		return
	}
	t.Logf("the guide's TrainJob %s: 2 pods with PET_NNODES=2, PET_MASTER_ADDR=%s, PET_MASTER_PORT=29500, PET_NODE_RANK from the completion index", job.Name, master)
}
