package serving_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// generatedConfig holds, per resource type, the configuration the last
// adoptForcedScale had Terraform generate on import.
var generatedConfig sync.Map

func generated(t *testing.T, typeName string) string {
	t.Helper()
	v, ok := generatedConfig.Load(typeName)
	if !ok {
		t.Fatalf("no configuration generated for %s", typeName)
	}
	return v.(string)
}

// adoptForcedScale creates obj with another field manager (as kubectl
// would), imports it with generated configuration and checks the empty plan
// and the untouched live object; then scales replicas 1 → 2 with
// force_conflicts: the plan must be refused, naming every field it would
// change beyond the replicas (including mustShow); with exactly those
// accepted, the apply changes them, replicas (at replicasPath), and nothing
// else in the live object.
func adoptForcedScale(t *testing.T, env *testenv.Env, typeName string, obj acctest.Object, created *unstructured.Unstructured, replicasPath string, mustShow ...string) {
	t.Helper()
	name := created.GetName()
	client := env.Dynamic.Resource(obj.GVR).Namespace("default")
	if _, err := client.Create(context.Background(), created, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	before, err := obj.Get(env)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	provider := func(extra string) string {
		return acctest.RequiredProviders + "variable \"kubeconfig\" { type = string }\nprovider \"aiplatform\" {\n  config_path = var.kubeconfig\n" + extra + "}\n"
	}
	write := func(w string, file, body string) {
		if err := os.WriteFile(filepath.Join(w, file), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(dir, "main.tf", provider("")+"import {\n  to = "+typeName+".adopted\n  id = \"default/"+name+"\"\n}\n")
	w := acctest.NewWorkspace(t, env, dir)
	if out, err := w.Run("plan", "-generate-config-out=generated.tf"); err != nil {
		t.Fatal(out, err)
	}
	if b, err := os.ReadFile(filepath.Join(w.Dir(), "generated.tf")); err == nil {
		generatedConfig.Store(typeName, string(b))
	}
	if out, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatal(out, err)
	}
	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan after import: exit code %d, want 0\n%s", code, out)
	}
	if live, err := obj.Get(env); err != nil {
		t.Fatal(err)
	} else if changed := kube.ChangedPaths(before.Object, live.Object); len(changed) > 0 {
		t.Fatalf("import, apply and plan changed the live object: %v", changed)
	}

	// Scale with force_conflicts.
	gen, err := os.ReadFile(filepath.Join(w.Dir(), "generated.tf"))
	if err != nil {
		t.Fatal(err)
	}
	scaled := regexp.MustCompile(`(?m)^(\s*replicas\s*=\s*)1\s*$`).ReplaceAllString(string(gen), "${1}2")
	if scaled == string(gen) {
		t.Fatalf("no replicas = 1 in the generated configuration:\n%s", gen)
	}
	write(w.Dir(), "generated.tf", scaled)
	write(w.Dir(), "main.tf", provider("  force_conflicts = true\n"))
	if len(mustShow) == 0 {
		// Nothing beyond the replicas changes: the plan goes through.
		if out, err := w.Run("apply", "-auto-approve"); err != nil {
			t.Fatal(out, err)
		}
		live, err := obj.Get(env)
		if err != nil {
			t.Fatal(err)
		}
		if changed := kube.ChangedPaths(before.Object, live.Object); len(changed) != 1 || changed[0] != replicasPath {
			t.Fatalf("the forced scale changed %v, want only %s", changed, replicasPath)
		}
		return
	}
	out, err := w.Run("plan")
	if err == nil {
		t.Fatalf("a forced scale that changes unplanned live fields was planned without acceptance:\n%s", out)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range append([]string{"its plan does not show", "accept_live_changes"}, mustShow...) {
		if !strings.Contains(flat, want) {
			t.Errorf("refusal lacks %q:\n%s", want, out)
		}
	}
	if live, err := obj.Get(env); err != nil {
		t.Fatal(err)
	} else if changed := kube.ChangedPaths(before.Object, live.Object); len(changed) > 0 {
		t.Fatalf("the refused plan changed the live object: %v", changed)
	}

	// Accept exactly the shown fields.
	shown := regexp.MustCompile(`(spec\.[^\s:]+):\s`).FindAllStringSubmatch(out, -1)
	var accept []string
	seen := map[string]bool{}
	for _, m := range shown {
		if !seen[m[1]] {
			seen[m[1]] = true
			accept = append(accept, `"`+strings.ReplaceAll(m[1], `"`, `\"`)+`"`)
		}
	}
	t.Logf("refusal:\n%s", out)
	accepted := regexp.MustCompile(`(?m)^(\s*accept_live_changes\s*=\s*)null\s*$`).ReplaceAllString(scaled, "${1}["+strings.Join(accept, ", ")+"]")
	if accepted == scaled {
		t.Fatalf("no accept_live_changes = null in the generated configuration:\n%s", scaled)
	}
	write(w.Dir(), "generated.tf", accepted)
	if out, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatal(out, err)
	}
	live, err := obj.Get(env)
	if err != nil {
		t.Fatal(err)
	}
	// Exactly the shown fields and the planned replicas changed.
	want := map[string]bool{replicasPath: true}
	for p := range seen {
		want[p] = true
	}
	for _, p := range kube.ChangedPaths(before.Object, live.Object) {
		if !want[p] {
			t.Errorf("the apply changed %s, which the plan did not show", p)
		}
		delete(want, p)
	}
	for p := range want {
		t.Errorf("the plan showed %s changing, but it did not", p)
	}
}
