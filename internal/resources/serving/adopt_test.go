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

// adoptedRay is a RayCluster shaped like KubeRay's ray-cluster.complete.yaml
// sample (written here, not copied): a log volume mounted in head and
// workers, container ports, requests that differ from limits, an env var
// from a Secret and a log-shipping sidecar on the workers.
func adoptedRay(name string) *unstructured.Unstructured {
	logs := map[string]any{"name": "ray-logs", "emptyDir": map[string]any{}}
	mount := map[string]any{"name": "ray-logs", "mountPath": "/tmp/ray"}
	res := func(reqCPU, limCPU string) map[string]any {
		return map[string]any{
			"requests": map[string]any{"cpu": reqCPU, "memory": "1Gi"},
			"limits":   map[string]any{"cpu": limCPU, "memory": "2Gi"},
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ray.io/v1", "kind": "RayCluster",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec": map[string]any{
			"rayVersion": "2.46.0",
			"headGroupSpec": map[string]any{
				"rayStartParams": map[string]any{},
				"template": map[string]any{"spec": map[string]any{
					"containers": []any{map[string]any{
						"name": "ray-head", "image": "rayproject/ray:2.46.0",
						"ports": []any{
							map[string]any{"containerPort": int64(6379), "name": "gcs"},
							map[string]any{"containerPort": int64(8265), "name": "dashboard"},
							map[string]any{"containerPort": int64(10001), "name": "client"},
						},
						"resources":    res("500m", "1"),
						"volumeMounts": []any{mount},
					}},
					"volumes": []any{logs},
				}},
			},
			"workerGroupSpecs": []any{map[string]any{
				"groupName": "small-group", "replicas": int64(1), "minReplicas": int64(1), "maxReplicas": int64(3),
				"rayStartParams": map[string]any{},
				"template": map[string]any{"spec": map[string]any{
					"containers": []any{
						map[string]any{
							"name": "ray-worker", "image": "rayproject/ray:2.46.0",
							"env": []any{map[string]any{"name": "HF_TOKEN", "valueFrom": map[string]any{
								"secretKeyRef": map[string]any{"name": "hf-token", "key": "token", "optional": true}}}},
							"resources":    res("500m", "1"),
							"volumeMounts": []any{mount},
						},
						map[string]any{
							"name": "log-shipper", "image": "busybox:1.36",
							"args":         []any{"sh", "-c", "tail -F /tmp/ray/session_latest/logs/raylet.out"},
							"volumeMounts": []any{mount},
						},
					},
					"volumes": []any{logs},
				}},
			}},
		},
	}}
}

// An adopted RayCluster (created by another field manager, as kubectl
// would) imports with generated configuration and an empty plan, leaving the
// live object untouched. Scaling it by force takes the atomic worker group
// list, which would drop what the typed attributes do not carry (and write
// the limits as requests): the plan names every such field and refuses;
// accepting exactly those fields lets the apply change them and nothing
// else in the live object.
func TestAccRayClusterAdoptForcedScaleShowsDrops(t *testing.T) {
	env := acctest.Env(t)
	rayNodes(t, env)
	adoptForcedScale(t, env, "aiplatform_ray_cluster", rayCluster("default", "adopted"), adoptedRay("adopted"),
		`spec.workerGroupSpecs["groupName=small-group"].replicas`,
		`spec.workerGroupSpecs["groupName=small-group"].template.spec.volumes`)
}

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
