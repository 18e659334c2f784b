package kueue_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

// The migration guide's other path: Kueue objects applied as
// kubernetes_manifest applies them are adopted with import blocks, the
// resource blocks written by `plan -generate-config-out`; the apply imports
// without writing (resourceVersion unchanged) and the next plan is empty.
func TestAccImportBlocksGenerateConfig(t *testing.T) {
	env := acctest.Env(t)
	ctx := context.Background()
	objs := []struct {
		resource, namespace, name string
		manifest                  map[string]any
	}{
		{"workloadpriorityclasses", "", "imp-high", map[string]any{"kind": "WorkloadPriorityClass", "value": 500, "description": "imported"}},
		{"resourceflavors", "", "imp-rf", map[string]any{"kind": "ResourceFlavor", "spec": map[string]any{"nodeLabels": map[string]any{"testpool": "cq"}}}},
		{"cohorts", "", "imp-cohort", map[string]any{"kind": "Cohort", "spec": map[string]any{}}},
		{"clusterqueues", "", "imp-cq", map[string]any{"kind": "ClusterQueue", "spec": map[string]any{
			"cohortName":        "imp-cohort",
			"namespaceSelector": map[string]any{},
			"resourceGroups": []any{map[string]any{"coveredResources": []any{"nvidia.com/gpu"}, "flavors": []any{
				map[string]any{"name": "imp-rf", "resources": []any{map[string]any{"name": "nvidia.com/gpu", "nominalQuota": "4"}}}}}}}}},
		{"localqueues", "default", "imp-lq", map[string]any{"kind": "LocalQueue", "spec": map[string]any{"clusterQueue": "imp-cq"}}},
	}
	versions := map[string]string{}
	for _, o := range objs {
		m := o.manifest
		m["apiVersion"] = "kueue.x-k8s.io/v1beta2"
		meta := map[string]any{"name": o.name}
		if o.namespace != "" {
			meta["namespace"] = o.namespace
		}
		m["metadata"] = meta
		body, _ := json.Marshal(m)
		live := kueueObject(o.resource, o.namespace, o.name)
		ri := env.Dynamic.Resource(live.GVR)
		opts := metav1.PatchOptions{FieldManager: "Hashicorp"}
		var err error
		if o.namespace != "" {
			_, err = ri.Namespace(o.namespace).Patch(ctx, o.name, types.ApplyPatchType, body, opts)
		} else {
			_, err = ri.Patch(ctx, o.name, types.ApplyPatchType, body, opts)
		}
		if err != nil {
			t.Fatalf("applying %s as kubernetes_manifest would: %v", o.name, err)
		}
		got, err := live.Get(env)
		if err != nil || got == nil {
			t.Fatalf("reading %s: %v", o.name, err)
		}
		versions[o.name] = got.GetResourceVersion()
	}

	w := acctest.NewWorkspace(t, env, "testdata/import")
	out, err := w.Run("plan", "-generate-config-out=generated.tf")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "5 to import, 0 to add, 0 to change, 0 to destroy") {
		t.Fatalf("plan with generated configuration:\n%s", out)
	}
	generated, err := os.ReadFile(filepath.Join(w.Dir(), "generated.tf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated.tf:\n%s", generated)
	if _, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatal(err)
	}
	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan after the import is not empty (exit %d):\n%s", code, out)
	}
	for _, o := range objs {
		got, err := kueueObject(o.resource, o.namespace, o.name).Get(env)
		if err != nil || got == nil {
			t.Fatalf("%s after the import: %v", o.name, err)
		}
		if got.GetResourceVersion() != versions[o.name] {
			t.Errorf("%s was written by the import: resourceVersion %s → %s", o.name, versions[o.name], got.GetResourceVersion())
		}
	}
}
