package upgrades_test

import (
	"context"
	"fmt"
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

// Kubeflow Trainer upgraded in place from the previous default (2.2.0) to
// the default (2.3.0) under a running TrainJob, as a platform team does on
// day 2 (issue #29). 2.3 moved its CRDs from the chart's crds/ into its
// templates: Helm created them at the 2.2 install without its ownership
// label and annotations, and a plain Helm upgrade refuses to take them over
// ("invalid ownership metadata"). The plan says the upgrade adopts them,
// and the apply does. The TrainJob, its JobSet and its pods keep their
// UIDs; the 2.3 manager removes the finalizer 2.2 put on the runtime in use
// (its release notes: runtime finalizers are gone) and runs a new TrainJob;
// the CRDs are 2.3's, owned by the release, kept by its uninstall; the plan
// after is empty.
func TestAccTrainerUpgradeWithLiveTrainJob(t *testing.T) {
	env := acctest.Env(t)
	ctx := context.Background()
	previous, current := podrunner.TrainerPreviousVersion, podrunner.TrainerVersion
	writeWith := func(dir, version, cpu, extra string) {
		t.Helper()
		body := "variable \"kubeconfig\" { type = string }\n" + acctest.Provider(env) + acctest.JobSetBlock(t, "this", "") + fmt.Sprintf(`
resource "aiplatform_trainer" "this" {
  version     = %q
  chart       = { path = %q }
  timeout     = "10m" # the first run builds Trainer 2.2.0 (~1 min cold with tools/k8s-v0.35 built)
  remove_crds = true
  values      = <<-EOT
    manager:
      resources:
        requests:
          cpu: %s
          memory: 128Mi
  EOT
  depends_on = [aiplatform_jobset_controller.this]
%s
}
`, strings.TrimPrefix(version, "v"), acctest.TrainerChartAt(t, version), cpu, extra)
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write := func(dir, version string) { writeWith(dir, version, "100m", "") }
	src := t.TempDir()
	write(src, previous)
	w := acctest.NewWorkspace(t, env, src)
	if _, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatal(err)
	}
	managerImage := func() string {
		t.Helper()
		d, err := acctest.TrainerDeployment.Get(env)
		if err != nil || d == nil {
			t.Fatalf("the Trainer's Deployment: %v", err)
		}
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		return fmt.Sprint(containers[0].(map[string]any)["image"])
	}
	if img := managerImage(); !strings.HasSuffix(img, ":"+previous) {
		t.Fatalf("the 2.2 install runs image %s", img)
	}
	crds := env.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	trainerCRDs := []string{"clustertrainingruntimes.trainer.kubeflow.org", "trainingruntimes.trainer.kubeflow.org", "trainjobs.trainer.kubeflow.org"}
	for _, name := range trainerCRDs {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if owner := crd.GetAnnotations()["meta.helm.sh/release-name"]; owner != "" {
			t.Fatalf("CRD %s is owned by release %s after the 2.2 install: created from crds/, it should carry no ownership", name, owner)
		}
	}

	// Live work: a runtime of the test's own (kwok keeps its pods Running)
	// and a TrainJob on it, run by the 2.2 manager and JobSet.
	runtimes := env.Dynamic.Resource(schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "clustertrainingruntimes"})
	runtime := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
		"metadata": map[string]any{"name": "upgrade-torch", "labels": map[string]any{"trainer.kubeflow.org/framework": "torch"}},
		"spec": map[string]any{
			"mlPolicy": map[string]any{"numNodes": int64(1), "torch": map[string]any{}},
			"template": map[string]any{"spec": map[string]any{"replicatedJobs": []any{map[string]any{
				"name": "node",
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
					"spec": map[string]any{"template": map[string]any{
						"metadata": map[string]any{"annotations": map[string]any{testenv.PodCompleteDelayAnnotation: "24h"}},
						"spec":     map[string]any{"containers": []any{map[string]any{"name": "node", "image": "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"}}},
					}},
				},
			}}}},
		},
	}}
	if _, err := acctest.CreateThroughWebhooks(env, schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "clustertrainingruntimes"}, runtime); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The runtime is not the configuration's: removed with the CRDs by
		// the destroy (remove_crds), unless a finalizer held it.
		_ = runtimes.Delete(context.Background(), "upgrade-torch", metav1.DeleteOptions{})
	})
	if _, err := acctest.CreateThroughWebhooks(env, acctest.TrainJobsGVR, acctest.TrainJob("live", "upgrade-torch", 2)); err != nil {
		t.Fatal(err)
	}
	pods := acctest.Pods{Namespace: "default", Selector: "jobset.sigs.k8s.io/jobset-name=live"}
	live, err := pods.Await(env, 3*time.Minute, acctest.RunningPods(2))
	if err != nil {
		t.Fatal(err)
	}
	uids := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		tj, err := env.Dynamic.Resource(acctest.TrainJobsGVR).Namespace("default").Get(ctx, "live", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		js, err := env.Dynamic.Resource(acctest.JobSetsGVR).Namespace("default").Get(ctx, "live", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out["trainjob/live"], out["jobset/live"] = string(tj.GetUID()), string(js.GetUID())
		ps, err := pods.List(env)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			out["pod/"+p.Name] = string(p.UID)
		}
		return out
	}
	before := uids()
	if len(before) != 2+len(live) {
		t.Fatalf("live work before the upgrade: %v", before)
	}
	finalizers := func() []string {
		t.Helper()
		rt, err := runtimes.Get(ctx, "upgrade-torch", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return rt.GetFinalizers()
	}
	const inUse = "trainer.kubeflow.org/resource-in-use"
	if err := acctest.Eventually(time.Minute, "the 2.2 manager's finalizer on the runtime in use", func() (bool, string) {
		f := finalizers()
		return slices.Contains(f, inUse), fmt.Sprint(f)
	}); err != nil {
		t.Fatal(err)
	}

	// The plan of the upgrade says what 2.3 changes, the adoption among it.
	write(w.Dir(), current)
	out, err := w.Run("plan")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"changes what users see", "the CRDs move from the chart's crds/ into its templates",
		"CRD trainjobs.trainer.kubeflow.org moves from the chart's crds/ into", "ownership label and", "~ version"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("the upgrade's plan lacks %q:\n%s", want, out)
		}
	}
	// A failed upgrade: the 2.3 manager asks for more CPU than any node
	// has, never becomes ready, and the release rolls back to 2.2. Helm's
	// rollback deletes what the failed revision had and the one rolled back
	// to has not — the CRDs, now in the templates, and with them every
	// TrainJob — unless they are marked helm.sh/resource-policy=keep, as
	// the provider marks every CRD of a release: the CRDs and the live work
	// stay, and the 2.2 manager runs again. The CRDs the failed upgrade
	// changed to 2.3's are put back to 2.2's (which Helm's rollback does not
	// do), so the plan of the 2.2 configuration is empty.
	writeWith(w.Dir(), current, "1000", "  timeouts {\n    update = \"45s\"\n  }")
	out, err = w.Run("apply", "-auto-approve")
	if flat := strings.Join(strings.Fields(out), " "); err == nil || !strings.Contains(flat, "Upgrading Kubeflow Trainer failed") ||
		!strings.Contains(flat, "rolled back to revision 1") {
		t.Fatalf("an upgrade whose manager can never be scheduled: %v, want it rolled back to revision 1:\n%s", err, out)
	}
	for _, name := range trainerCRDs {
		if _, err := crds.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("CRD %s after the failed upgrade: %v", name, err)
		}
	}
	if after := uids(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the TrainJob, its JobSet and pods after the failed upgrade: %v, before: %v (want the same, none replaced)", after, before)
	}
	if img := managerImage(); !strings.HasSuffix(img, ":"+previous) {
		t.Errorf("after the rollback the manager's image is %s, want tag %s", img, previous)
	}
	if err := acctest.Eventually(2*time.Minute, "the 2.2 manager alone, ready", func() (bool, string) {
		d, err := acctest.TrainerDeployment.Get(env)
		if err != nil || d == nil {
			return false, fmt.Sprint(err)
		}
		st, _, _ := unstructured.NestedMap(d.Object, "status")
		return st["replicas"] == int64(1) && st["updatedReplicas"] == int64(1) && st["readyReplicas"] == int64(1), fmt.Sprint(st)
	}); err != nil {
		t.Error(err)
	}
	write(w.Dir(), previous)
	if code, out := w.PlanExitCode(); code != 0 {
		t.Errorf("plan of the 2.2 configuration after the rollback: exit %d, want 0 (the release is 2.2 again):\n%s", code, out)
	}

	write(w.Dir(), current)
	if out, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatalf("the upgrade: %v\n%s", err, out)
	}
	if code, out := w.PlanExitCode(); code != 0 || strings.Contains(out, "changes what users see") {
		t.Errorf("plan after the upgrade: exit %d, want 0 and no upgrade warning:\n%s", code, out)
	}
	if img := managerImage(); !strings.HasSuffix(img, ":"+current) {
		t.Errorf("after the upgrade the manager's image is %s, want tag %s", img, current)
	}
	for _, name := range trainerCRDs {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a := crd.GetAnnotations()
		if a["meta.helm.sh/release-name"] != "kubeflow-trainer" || a["meta.helm.sh/release-namespace"] != "kubeflow-system" ||
			crd.GetLabels()["app.kubernetes.io/managed-by"] != "Helm" || a["helm.sh/resource-policy"] != "keep" {
			t.Errorf("CRD %s after the upgrade: labels %v, annotations %v; want it owned by release kubeflow-system/kubeflow-trainer and kept by its uninstall",
				name, crd.GetLabels(), a)
		}
	}
	if after := uids(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the TrainJob, its JobSet and pods after the upgrade: %v, before: %v (want the same, none replaced)", after, before)
	}
	if _, err := pods.Await(env, time.Minute, acctest.RunningPods(2)); err != nil {
		t.Error(err)
	}
	if err := acctest.Eventually(time.Minute, "the 2.3 manager removing the runtime's finalizer", func() (bool, string) {
		f := finalizers()
		return !slices.Contains(f, inUse), fmt.Sprint(f)
	}); err != nil {
		t.Error(err)
	}
	if _, err := acctest.CreateThroughWebhooks(env, acctest.TrainJobsGVR, acctest.TrainJob("after", "upgrade-torch", 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := (acctest.Pods{Namespace: "default", Selector: "jobset.sigs.k8s.io/jobset-name=after"}).Await(env, 2*time.Minute, acctest.RunningPods(1)); err != nil {
		t.Errorf("a TrainJob created after the upgrade: %v", err)
	}
}
