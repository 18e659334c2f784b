package kube_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

var deploymentKind = kube.Kind{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}

func accClient(t *testing.T) (*kube.Client, *testenv.Env) {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1")
	}
	env := testenv.Current()
	if env == nil {
		t.Fatal("TF_ACC is set but no test cluster is running")
	}
	return kube.NewClientFromREST(env.RESTConfig, false), env
}

// deployment is a Deployment named name in default with the given pod spec.
func deployment(name string, replicas int64, podSpec map[string]any) *unstructured.Unstructured {
	labels := map[string]any{"app": name}
	return kube.NewObject(deploymentKind, kube.Ref{Namespace: "default", Name: name}, map[string]any{"spec": map[string]any{
		"replicas": replicas,
		"selector": map[string]any{"matchLabels": labels},
		"template": map[string]any{"metadata": map[string]any{"labels": labels}, "spec": podSpec},
	}})
}

func container(name, image string, mounts ...string) map[string]any {
	c := map[string]any{"name": name, "image": image}
	if len(mounts) > 0 {
		list := make([]any, len(mounts))
		for i, m := range mounts {
			list[i] = map[string]any{"name": m, "mountPath": "/" + m}
		}
		c["volumeMounts"] = list
	}
	return c
}

func emptyDirs(names ...string) []any {
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = map[string]any{"name": n, "emptyDir": map[string]any{}}
	}
	return out
}

func paths(cs []kube.Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Path
	}
	return out
}

// An object the provider applied before: dropping a volume and adding a
// container beside the live one are reported by name; the replica count,
// which the resource manages, is not; server defaults are not changes.
func TestAccPreviewApplyOwnFields(t *testing.T) {
	c, env := accClient(t)
	ctx := context.Background()
	const name = "preview-own"

	missing, err := c.PreviewApply(ctx, deploymentKind, deployment(name, 1, nil), false, nil)
	if err != nil || !missing.Missing || len(missing.Changes) != 0 {
		t.Fatalf("a missing object: %+v, %v", missing, err)
	}

	before := deployment(name, 1, map[string]any{
		"containers": []any{container("nginx", "nginx:1.27", "data", "logs")},
		"volumes":    emptyDirs("data", "logs"),
	})
	if _, err := c.Apply(ctx, deploymentKind, before); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), deploymentKind, kube.Ref{Namespace: "default", Name: name}) })

	same, err := c.PreviewApply(ctx, deploymentKind, before, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(same.Changes) != 0 || same.Forced() {
		t.Fatalf("re-applying the same object changes %v (conflicts %v)", same.Lines(), same.Conflicts)
	}

	planned := deployment(name, 2, map[string]any{
		"containers": []any{container("nginx", "nginx:1.27", "data"), container("main", "busybox:1")},
		"volumes":    emptyDirs("data"),
	})
	managed := []string{"spec.replicas", `spec.template.spec.containers["name=nginx"].image`}
	p, err := c.PreviewApply(ctx, deploymentKind, planned, false, managed)
	if err != nil {
		t.Fatal(err)
	}
	if p.Forced() {
		t.Fatalf("own fields conflict: %v", p.Conflicts)
	}
	wantAll := []string{
		"spec.replicas",
		`spec.template.spec.containers["name=main"]`,
		`spec.template.spec.containers["name=nginx"].volumeMounts["mountPath=/logs"]`,
		`spec.template.spec.volumes["name=logs"]`,
	}
	if got := paths(p.Changes); !slices.Equal(got, wantAll) {
		t.Fatalf("changes:\n%s\nwant\n%s", strings.Join(p.Lines(), "\n"), strings.Join(wantAll, "\n"))
	}
	if got := paths(p.Unmanaged); !slices.Equal(got, wantAll[1:]) {
		t.Fatalf("unmanaged: %v, want %v", got, wantAll[1:])
	}
	for _, ch := range p.Unmanaged[1:] {
		if ch.Want != "(absent)" {
			t.Errorf("%s: want removal, got %s → %s", ch.Path, ch.Live, ch.Want)
		}
	}
	// Managed as a resource that reads back what it writes: the added
	// container is its own (its attributes show it), the dropped volume
	// and mount are not (they were never in the planned object).
	own, err := c.PreviewApply(ctx, deploymentKind, planned, false, kube.LeafPaths(planned.Object))
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(own.Unmanaged); !slices.Equal(got, wantAll[2:]) {
		t.Fatalf("unmanaged with the planned object's paths: %v, want %v", got, wantAll[2:])
	}
	// With the prior object's paths too, the removals were the resource's own.
	if all, err := c.PreviewApply(ctx, deploymentKind, planned, false, append(kube.LeafPaths(planned.Object), kube.LeafPaths(before.Object)...)); err != nil || len(all.Unmanaged) != 0 {
		t.Fatalf("unmanaged with the prior object's paths: %v, %v", all.Lines(), err)
	}

	// Nothing was written: the live object still has both volumes.
	live, err := env.Client.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(live.Spec.Template.Spec.Volumes); n != 2 || len(live.Spec.Template.Spec.Containers) != 1 || *live.Spec.Replicas != 1 {
		t.Fatalf("the dry run changed the live object: %d volumes, %d containers, %d replicas", n, len(live.Spec.Template.Spec.Containers), *live.Spec.Replicas)
	}
}

// An object another manager created: the unforced apply conflicts on the
// fields whose values differ; the preview names them and their manager, and
// says what force would do besides — replace the atomic tolerations list.
func TestAccPreviewApplyConflicts(t *testing.T) {
	c, env := accClient(t)
	ctx := context.Background()
	const name = "preview-conflict"
	tolerations := func(keys ...string) []any {
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = map[string]any{"key": k, "operator": "Exists"}
		}
		return out
	}
	byKubectl := deployment(name, 1, map[string]any{
		"containers":  []any{container("nginx", "nginx:1.27")},
		"tolerations": tolerations("gpu", "spot"),
	})
	dyn := env.Dynamic.Resource(deploymentKind.GVR()).Namespace("default")
	if _, err := dyn.Create(ctx, byKubectl, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), deploymentKind, kube.Ref{Namespace: "default", Name: name}) })

	planned := deployment(name, 2, map[string]any{
		"containers":  []any{container("nginx", "nginx:1.27")},
		"tolerations": tolerations("gpu"),
	})
	p, err := c.PreviewApply(ctx, deploymentKind, planned, false, []string{"spec.replicas"})
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	for _, cf := range p.Conflicts {
		fields = append(fields, cf.Field+" "+cf.Manager)
	}
	wantConflicts := []string{".spec.replicas kubectl-create", ".spec.template.spec.tolerations kubectl-create"}
	if !slices.Equal(fields, wantConflicts) {
		t.Fatalf("conflicts %q, want %q", fields, wantConflicts)
	}
	if got := paths(p.Changes); !slices.Equal(got, []string{"spec.replicas", "spec.template.spec.tolerations"}) {
		t.Fatalf("changes of the forced apply: %v", p.Lines())
	}
	if got := paths(p.Unmanaged); !slices.Equal(got, []string{"spec.template.spec.tolerations"}) {
		t.Fatalf("unmanaged: %v", got)
	}
	text := p.ConflictText()
	for _, s := range []string{"spec.replicas", `"kubectl-create"`, `spec.template.spec.tolerations: [{"key":"gpu","operator":"Exists"},{"key":"spot","operator":"Exists"}] → [{"key":"gpu","operator":"Exists"}]`} {
		if !strings.Contains(text, s) {
			t.Errorf("conflict text lacks %q:\n%s", s, text)
		}
	}

	// With force the same changes, no conflicts.
	forced, err := c.PreviewApply(ctx, deploymentKind, planned, true, []string{"spec.replicas"})
	if err != nil {
		t.Fatal(err)
	}
	if forced.Forced() || !slices.Equal(paths(forced.Unmanaged), paths(p.Unmanaged)) {
		t.Fatalf("forced preview: conflicts %v, unmanaged %v", forced.Conflicts, forced.Lines())
	}
	live, err := env.Client.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(live.Spec.Template.Spec.Tolerations) != 2 || *live.Spec.Replicas != 1 {
		t.Fatalf("the dry run changed the live object: %+v", live.Spec)
	}

	// The apply itself fails on the conflict, and its error says what
	// force_conflicts would take and what else it would change.
	_, err = c.Apply(ctx, deploymentKind, planned)
	if err == nil {
		t.Fatal("apply over another manager's fields succeeded without force")
	}
	if got := kube.Conflicts(err); len(got) != 2 {
		t.Errorf("Conflicts(apply error) = %+v", got)
	}
	for _, s := range []string{`"kubectl-create"`, "force_conflicts = true would change the live object", `spec.template.spec.tolerations: [{"key":"gpu","operator":"Exists"},{"key":"spot","operator":"Exists"}] → [{"key":"gpu","operator":"Exists"}]`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("apply error lacks %q:\n%v", s, err)
		}
	}
}
