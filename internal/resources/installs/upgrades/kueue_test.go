package upgrades_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// A version change of an install is a planned change like any other
// (issue #29): the plan of Kueue 0.17.0 → 0.19.2 warns of what 0.19 changes
// for users, upstream's notes and the CRD changes read from both charts; an upgrade to 0.20 while a CRD still lists v1beta1 in
// status.storedVersions is refused at plan, naming the safe path, and
// changes nothing; that path, aiplatform_storage_version_migration, is
// planned with its counts, applied, and applied again when the list grows; the upgrade
// applies in place under live work (issue #29: an admitted job's Workload
// and pod kept, never evicted; the waiting job admitted by the new manager
// once the quota frees) and the next plan is empty.
func TestAccKueueUpgradePlan(t *testing.T) {
	env := acctest.Env(t)
	ctx := context.Background()
	src := t.TempDir()
	migration := ""
	// A queue with room for one 1-CPU job: the upgrade happens with one
	// job admitted and running and one waiting.
	const queues = `
resource "aiplatform_resource_flavor" "cpu" {
  name       = "upgrade-cpu"
  depends_on = [aiplatform_kueue.this]
}

resource "aiplatform_cluster_queue" "upgrade" {
  name = "upgrade"
  resource_groups = [{
    covered_resources = ["cpu"]
    flavors = [{
      name      = aiplatform_resource_flavor.cpu.name
      resources = [{ name = "cpu", nominal_quota = "1" }]
    }]
  }]
}

resource "aiplatform_local_queue" "upgrade" {
  name          = "upgrade"
  namespace     = "default"
  cluster_queue = aiplatform_cluster_queue.upgrade.name
}
`
	write := func(dir, version string) {
		t.Helper()
		body := "variable \"kubeconfig\" { type = string }\n" + acctest.Provider(env) + acctest.KueueBlockAt(t, version, "") + queues + migration
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(src, "v0.17.0")
	w := acctest.NewWorkspace(t, env, src)
	if _, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatal(err)
	}

	running := acctest.Job{Namespace: "default", Name: "upgrade-running", Queue: "upgrade", GPUsPerPod: 1, Resource: "cpu", RunFor: time.Hour}
	waiting := acctest.Job{Namespace: "default", Name: "upgrade-waiting", Queue: "upgrade", GPUsPerPod: 1, Resource: "cpu", RunFor: time.Hour}
	running.Submit(t, env)
	running.Eventually(t, env, "admitted by Kueue 0.17 and its pod scheduled", 2*time.Minute, func(s acctest.State) bool { return !s.Suspended && s.Scheduled == 1 })
	waiting.Submit(t, env)
	waiting.Consistently(t, env, "held: no quota left", 3*time.Second, func(s acctest.State) bool { return s.Suspended && s.Pods == 0 })
	before := liveUIDs(t, env, running)

	crds := env.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	const cq = "clusterqueues.kueue.x-k8s.io"
	setStored := func(versions string) {
		t.Helper()
		patch := `{"status":{"storedVersions":` + versions + `}}`
		if _, err := crds.Patch(ctx, cq, k8stypes.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatalf("setting the stored versions of %s to %s: %v", cq, versions, err)
		}
	}
	// A cluster that once ran Kueue ≤ 0.15 still lists v1beta1.
	setStored(`["v1beta1","v1beta2"]`)
	write(w.Dir(), "v0.19.2")
	body, _ := os.ReadFile(filepath.Join(w.Dir(), "main.tf"))
	if err := os.WriteFile(filepath.Join(w.Dir(), "main.tf"), []byte(strings.Replace(string(body), `version = "0.19.2"`, `version = "0.20.0"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := w.Run("plan")
	if err == nil {
		t.Fatalf("plan of 0.17.0 → 0.20.0 with v1beta1 stored was not refused:\n%s", out)
	}
	for _, want := range []string{"Error: Upgrade path not supported by Kueue", "Kueue 0.20.0 stops serving", "kueue.x-k8s.io/v1beta1", cq, "stay below 0.20.0", "aiplatform_storage_version_migration", `with aiplatform_kueue.this`} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, out)
		}
	}

	// The safe path the refusal names: the storage-version migration (its
	// docs' example, verbatim) rewrites the ClusterQueues at v1beta2 and
	// trims the list; the plan counts them first.
	cqs := env.Dynamic.Resource(schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"})
	live, err := cqs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
		"metadata": map[string]any{"name": "stored-long-ago"}, "spec": map[string]any{"namespaceSelector": map[string]any{}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cqs.Delete(context.Background(), "stored-long-ago", metav1.DeleteOptions{}) })
	ex := acctest.ResourceExample(t, "aiplatform_storage_version_migration")
	migration = ex.Config
	storedNow := func() []string {
		t.Helper()
		crd, err := crds.Get(ctx, cq, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
		return v
	}
	migrate := func(what string) {
		t.Helper()
		write(w.Dir(), "v0.17.0")
		out, err := w.Run("plan")
		for _, want := range []string{"Warning: Storage-version migration planned", cq + ": 2 ClusterQueue object(s)", "rewritten at",
			"[v1beta1 v1beta2] → [v1beta2]", "stored_versions", "known after apply"} {
			if err != nil || !strings.Contains(out, want) {
				t.Errorf("the %s plan lacks %q (%v):\n%s", what, want, err, out)
			}
		}
		if _, err := w.Run("apply", "-auto-approve"); err != nil {
			t.Fatal(err)
		}
		if got := storedNow(); len(got) != 1 || got[0] != "v1beta2" {
			t.Errorf("after the %s the status.storedVersions of %s are %v, want [v1beta2]", what, cq, got)
		}
		if code, out := w.PlanExitCode(); code != 0 {
			t.Errorf("plan after the %s: exit %d, want 0:\n%s", what, code, out)
		}
	}
	migrate("migration")
	if after, err := cqs.Get(ctx, "stored-long-ago", metav1.GetOptions{}); err != nil || after.GetUID() != live.GetUID() {
		t.Errorf("the ClusterQueue after the migration: %v (uid %v, was %s)", err, after, live.GetUID())
	}
	// Listed again (the CRD stored at v1beta1 once more), it plans and
	// applies the rewrite again. (Its import: examples TestAccResourceExamples.)
	setStored(`["v1beta1","v1beta2"]`)
	migrate("second migration")

	write(w.Dir(), "v0.19.2")
	out, err = w.Run("plan")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Warning: Kueue 0.17.0 → 0.19.2 changes what users see", "WaitForPodsReady is on by default",
		"wait_for_pods_ready = { enable = false }", "KubeRay sidecars count against quota", "~ version",
		// and what the charts say, read from both (helm.Changes)
		// (terraform wraps a warning's lines at 78 columns, between words)
		"CRD clusterqueues.kueue.x-k8s.io v1beta2", "(spec.concurrentAdmissionPolicy)", "CRD workloads.kueue.x-k8s.io v1beta2"} {
		if !strings.Contains(out, want) {
			t.Errorf("the upgrade's plan lacks %q:\n%s", want, out)
		}
	}
	if _, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatal(err)
	}
	if code, out := w.PlanExitCode(); code != 0 || strings.Contains(out, "changes what users see") {
		t.Errorf("plan after the upgrade: exit %d, want 0 and no upgrade warning:\n%s", code, out)
	}
	dep, err := env.Dynamic.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).
		Namespace("kueue-system").Get(ctx, "kueue-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if labels := dep.GetLabels(); !strings.Contains(labels["helm.sh/chart"]+labels["app.kubernetes.io/version"], "0.19") {
		t.Errorf("after the upgrade the manager's Deployment is labelled %v, want the 0.19 chart's", labels)
	}

	// The live work went through the upgrade untouched: the admitted job's
	// Workload and pod are the same objects, never evicted; the waiting one
	// still waits. When the running job goes, the 0.19 manager admits it.
	if after := liveUIDs(t, env, running); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the admitted job's Workload and pod after the upgrade: %v, before: %v (want the same, none replaced)", after, before)
	}
	if s, err := running.Observe(env); err != nil || s.Suspended || s.Scheduled != 1 || s.Evictions != 0 {
		t.Errorf("the admitted job after the upgrade: %+v, %v (want running, never evicted)", s, err)
	}
	waiting.Consistently(t, env, "still held by the 0.19 manager", 2*time.Second, func(s acctest.State) bool { return s.Suspended && s.Pods == 0 })
	policy := metav1.DeletePropagationBackground
	if err := env.Client.BatchV1().Jobs("default").Delete(ctx, running.Name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		t.Fatal(err)
	}
	waiting.Eventually(t, env, "admitted by Kueue 0.19 once the quota is free", 2*time.Minute, func(s acctest.State) bool { return !s.Suspended && s.Scheduled == 1 })
}

// liveUIDs are the UIDs of a job's Workload and pods, by kind and name.
func liveUIDs(t *testing.T, env *testenv.Env, j acctest.Job) map[string]string {
	t.Helper()
	out := map[string]string{}
	ctx := context.Background()
	wls, err := env.Dynamic.Resource(schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}).Namespace(j.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range wls.Items {
		for _, o := range w.GetOwnerReferences() {
			if o.Kind == "Job" && o.Name == j.Name {
				out["workload/"+w.GetName()] = string(w.GetUID())
			}
		}
	}
	pods, err := env.Client.CoreV1().Pods(j.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + j.Name})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		out["pod/"+p.Name] = string(p.UID)
	}
	if len(out) != 2 {
		t.Fatalf("job %s has %v, want one Workload and one pod", j, out)
	}
	return out
}
