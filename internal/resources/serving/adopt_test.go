package serving_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
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
	const name = "adopted"
	obj := rayCluster("default", name)
	client := env.Dynamic.Resource(obj.GVR).Namespace("default")
	if _, err := client.Create(context.Background(), adoptedRay(name), metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
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
	write(dir, "main.tf", provider("")+"import {\n  to = aiplatform_ray_cluster.adopted\n  id = \"default/"+name+"\"\n}\n")
	w := acctest.NewWorkspace(t, env, dir)
	if out, err := w.Run("plan", "-generate-config-out=generated.tf"); err != nil {
		t.Fatal(out, err)
	}
	if out, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatal(out, err)
	}
	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan after import: exit code %d, want 0\n%s", code, out)
	}
	untouched := func(what string, want *unstructured.Unstructured, except ...string) {
		t.Helper()
		live, err := obj.Get(env)
		if err != nil {
			t.Fatal(err)
		}
		a, b := specWithout(want, except), specWithout(live, except)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: live spec changed:\nbefore %v\nafter  %v", what, a, b)
		}
	}
	untouched("import and plan", before)

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
	out, err := w.Run("plan")
	if err == nil {
		t.Fatalf("a forced scale that drops live fields was planned without acceptance:\n%s", out)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"its plan does not show", `spec.workerGroupSpecs["groupName=small-group"].template.spec.volumes`, "accept_live_changes"} {
		if !strings.Contains(flat, want) {
			t.Errorf("refusal lacks %q:\n%s", want, out)
		}
	}
	untouched("refused plan", before)

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
	if len(accept) == 0 {
		t.Fatalf("no field paths in the refusal:\n%s", out)
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
	groups, _, _ := unstructured.NestedSlice(live.Object, "spec", "workerGroupSpecs")
	if len(groups) != 1 || groups[0].(map[string]any)["replicas"] != int64(2) {
		t.Fatalf("worker groups after the scale: %v", groups)
	}
	// Exactly the shown fields and the planned replicas changed.
	want := map[string]bool{`spec.workerGroupSpecs["groupName=small-group"].replicas`: true}
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

// specWithout is obj's spec without the named top-level spec fields.
func specWithout(obj *unstructured.Unstructured, except []string) map[string]any {
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	for _, k := range except {
		delete(spec, k)
	}
	return spec
}
