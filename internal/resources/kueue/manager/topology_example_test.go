package manager_test

import (
	"context"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// examples/topology, applied with the terraform CLI on this package's
// block/rack-labelled nodes (its label variables set to theirs): the plan
// is empty afterwards, Kueue makes the queue Active, and a 16-GPU Job that
// requires one block runs on two whole nodes of block b2.
func TestAccTopologyExample(t *testing.T) {
	env := acctest.Env(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	w := acctest.NewWorkspace(t, env, filepath.Join(root, "examples", "topology"))
	w.Env = append(w.Env, "TF_VAR_block_label="+blockLabel, "TF_VAR_rack_label="+rackLabel)
	if out, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatal(out, err)
	}
	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan -detailed-exitcode after apply exited %d, want 0:\n%s", code, out)
	}
	cq, err := env.Dynamic.Resource(gvr("clusterqueues")).Get(context.Background(), "training", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cq.Object["spec"].(map[string]any)["resourceGroups"].([]any)[0].(map[string]any)["flavors"].([]any)[0].(map[string]any)["name"]; got != "h100-tas" {
		t.Fatalf("ClusterQueue training's flavor is %v, want h100-tas", got)
	}

	job, err := submit(t, env, "example-tas-16", "training", 2, 8, map[string]string{"kueue.x-k8s.io/podset-required-topology": blockLabel})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := waitPods(env, job, 2)
	if err != nil {
		t.Fatal(err)
	}
	blocks, hosts := map[string]bool{}, map[string]bool{}
	for _, p := range pods {
		if p.Spec.NodeSelector["kubernetes.io/hostname"] != p.Spec.NodeName {
			t.Fatalf("pod %s on %s has node selector %v: not placed by Kueue's topology-aware scheduling", p.Name, p.Spec.NodeName, p.Spec.NodeSelector)
		}
		node, err := env.Client.CoreV1().Nodes().Get(context.Background(), p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		blocks[node.Labels[blockLabel]], hosts[node.Name] = true, true
	}
	if len(hosts) != 2 || len(blocks) != 1 || !blocks["b2"] {
		t.Fatalf("the 2 x 8-GPU pods landed on nodes %v in blocks %v; want two nodes of block b2", keys(hosts), keys(blocks))
	}
	// The workspace's destroy waits for Kueue's finalizers: the Workload
	// must be gone first.
	if err := finish(env, job); err != nil {
		t.Fatal(err)
	}
	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan after the job ran exited %d, want 0:\n%s", code, out)
	}
}
