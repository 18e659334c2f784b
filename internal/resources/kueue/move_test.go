package kueue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

// Kueue objects applied as hashicorp/kubernetes' kubernetes_manifest applies
// them (server-side apply, field manager "Hashicorp") and recorded in a
// state as kubernetes_manifest resources move into the aiplatform resources
// with `moved` blocks: the plan adds, changes and destroys nothing, the
// refreshed state matches the configuration, and the live objects are not
// written (resourceVersion unchanged, no aiplatform field manager).
func TestAccMoveFromKubernetesManifest(t *testing.T) {
	env := acctest.Env(t)
	type obj struct {
		addr, resource, namespace, name string
		manifest                        map[string]any
	}
	objs := []obj{
		{"wpc", "workloadpriorityclasses", "", "moved-high", map[string]any{"kind": "WorkloadPriorityClass", "value": 1000, "description": "moved"}},
		{"rf", "resourceflavors", "", "moved-rf", map[string]any{"kind": "ResourceFlavor", "spec": map[string]any{"nodeLabels": map[string]any{"testpool": "cq"}}}},
		{"cohort", "cohorts", "", "moved-cohort", map[string]any{"kind": "Cohort", "spec": map[string]any{}}},
		{"cq", "clusterqueues", "", "moved-cq", map[string]any{"kind": "ClusterQueue", "spec": map[string]any{
			"cohortName":        "moved-cohort",
			"namespaceSelector": map[string]any{},
			"resourceGroups": []any{map[string]any{"coveredResources": []any{"nvidia.com/gpu"}, "flavors": []any{
				map[string]any{"name": "moved-rf", "resources": []any{map[string]any{"name": "nvidia.com/gpu", "nominalQuota": "4"}}}}}}}}},
		{"lq", "localqueues", "default", "moved-lq", map[string]any{"kind": "LocalQueue", "spec": map[string]any{"clusterQueue": "moved-cq"}}},
	}
	ctx := context.Background()
	var states []string
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
		var err error
		if o.namespace != "" {
			_, err = ri.Namespace(o.namespace).Patch(ctx, o.name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "Hashicorp"})
		} else {
			_, err = ri.Patch(ctx, o.name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "Hashicorp"})
		}
		if err != nil {
			t.Fatalf("applying %s as kubernetes_manifest would: %v", o.name, err)
		}
		got, err := live.Get(env)
		if err != nil || got == nil {
			t.Fatalf("reading %s: %v", o.name, err)
		}
		versions[o.name] = got.GetResourceVersion()
		// The dynamic value as Terraform stores it: value and type.
		manifest := fmt.Sprintf(`{"value":%s,"type":%s}`, body, mustJSON(t, impliedType(m)))
		object := fmt.Sprintf(`{"value":%s,"type":%s}`, mustJSON(t, got.Object), mustJSON(t, impliedType(got.Object)))
		states = append(states, fmt.Sprintf(`{"mode":"managed","type":"kubernetes_manifest","name":%q,"provider":"provider[\"registry.terraform.io/hashicorp/kubernetes\"]","instances":[{"schema_version":1,"attributes":{"manifest":%s,"object":%s,"computed_fields":null},"sensitive_attributes":[]}]}`,
			o.addr, manifest, object))
	}

	w := acctest.NewWorkspace(t, env, "testdata/move")
	acctest.WriteState(t, w, states...)
	// What the guide says: Terraform cannot plan the move while the source
	// provider is not installed.
	if out, err := w.Run("plan"); err == nil || !strings.Contains(out, "Missing required provider") ||
		!strings.Contains(out, "registry.terraform.io/hashicorp/kubernetes") {
		t.Fatalf("plan without hashicorp/kubernetes installed: want \"Missing required provider\", got %v:\n%s", err, out)
	}
	acctest.UseSourceProviders(t, w)

	out, err := w.Run("plan")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if !strings.Contains(out, "kubernetes_manifest."+o.addr+" has moved to") {
			t.Errorf("plan does not show the move of kubernetes_manifest.%s:\n%s", o.addr, out)
		}
	}
	t.Log(out)
	if !strings.Contains(out, "0 to add, 0 to change, 0 to destroy") {
		t.Fatalf("the move plans changes:\n%s", out)
	}
	if _, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatal(err)
	}
	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan after the move is not empty (exit %d):\n%s", code, out)
	}
	state, err := os.ReadFile(filepath.Join(w.Dir(), "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(state), "kubernetes_manifest") || strings.Count(string(state), `"provider": "provider[\"registry.terraform.io/aiplatform/aiplatform\"]"`) != len(objs) {
		t.Errorf("kubernetes_manifest left in state:\n%s", state)
	}
	for _, o := range objs {
		got, err := kueueObject(o.resource, o.namespace, o.name).Get(env)
		if err != nil || got == nil {
			t.Fatalf("%s after the move: %v (gone: %t)", o.name, err, got == nil)
		}
		if got.GetResourceVersion() != versions[o.name] {
			t.Errorf("%s was written by the move: resourceVersion %s → %s", o.name, versions[o.name], got.GetResourceVersion())
		}
		for _, mf := range got.GetManagedFields() {
			if mf.Manager == "terraform-provider-aiplatform" {
				t.Errorf("%s has fields managed by the provider after a move that should not write", o.name)
			}
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// impliedType is the Terraform type (in its JSON form) of a JSON value, as
// kubernetes_manifest's dynamic attributes record it.
func impliedType(v any) any {
	switch v := v.(type) {
	case map[string]any:
		attrs := map[string]any{}
		for k, e := range v {
			attrs[k] = impliedType(e)
		}
		return []any{"object", attrs}
	case []any:
		elems := []any{}
		for _, e := range v {
			elems = append(elems, impliedType(e))
		}
		return []any{"tuple", elems}
	case string:
		return "string"
	case bool:
		return "bool"
	case nil:
		return "dynamic"
	default:
		return "number"
	}
}
