package kube

import (
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestPathSegments(t *testing.T) {
	cases := map[string][]string{
		"spec.replicas": {"spec", "replicas"},
		`spec.template.spec.containers["name=main"].image`: {"spec", "template", "spec", "containers", "name=main", "image"},
		"spec.x[3].y":                                  {"spec", "x", "3", "y"},
		"spec.template.spec.containers[*].image":       {"spec", "template", "spec", "containers", "*", "image"},
		`metadata.labels["kueue.x-k8s.io/queue-name"]`: {"metadata", "labels", "kueue.x-k8s.io/queue-name"},
		`data["a\"b"]`:                                 {"data", `a"b`},
	}
	for in, want := range cases {
		if got := pathSegments(in); !slices.Equal(got, want) {
			t.Errorf("pathSegments(%q) = %q, want %q", in, got, want)
		}
	}
	pats := [][]string{pathSegments("spec.replicas"), pathSegments("spec.template.spec.containers[*].image")}
	for p, want := range map[string]bool{
		"spec.replicas": true,
		`spec.template.spec.containers["name=main"].image`: true,
		`spec.template.spec.containers["name=main"]`:       false, // the whole element: more than the image
		"spec.template.spec.volumes":                       false,
		"spec":                                             false,
	} {
		if got := covered(pathSegments(p), pats); got != want {
			t.Errorf("covered(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestKeyLists(t *testing.T) {
	live := map[string]any{"spec": map[string]any{
		"volumes":     []any{map[string]any{"name": "data", "emptyDir": map[string]any{}}, map[string]any{"name": "logs", "emptyDir": map[string]any{}}},
		"args":        []any{"a", "b"},
		"tolerations": []any{map[string]any{"key": "x"}, map[string]any{"key": "y"}},
	}}
	want := map[string]any{"spec": map[string]any{
		"volumes":     []any{map[string]any{"name": "logs", "emptyDir": map[string]any{}}},
		"args":        []any{"a"},
		"tolerations": []any{map[string]any{"key": "x"}},
	}}
	l, w := keyLists(live, want, "")
	var got []string
	for _, c := range Compare(l.(map[string]any), w.(map[string]any), false) {
		got = append(got, c.Path+" "+c.Live+" → "+c.Want)
	}
	wantLines := []string{
		`spec.args ["a","b"] → ["a"]`,
		`spec.tolerations [{"key":"x"},{"key":"y"}] → [{"key":"x"}]`,
		`spec.volumes["name=data"] {"emptyDir":{},"name":"data"} → (absent)`,
	}
	if !slices.Equal(got, wantLines) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantLines, "\n"))
	}
	// the inputs are left as they were
	if _, ok := live["spec"].(map[string]any)["volumes"].([]any); !ok {
		t.Fatal("keyLists changed its input")
	}
}

func TestConflicts(t *testing.T) {
	err := apierrors.NewApplyConflict([]metav1.StatusCause{
		{Type: metav1.CauseTypeFieldManagerConflict, Field: ".spec.template.spec.tolerations", Message: `conflict with "kubectl" using apps/v1`},
		{Type: metav1.CauseTypeFieldManagerConflict, Field: ".spec.replicas", Message: `conflict with "kube-controller-manager" with subresource "scale" using apps/v1`},
	}, "Apply failed with 2 conflicts")
	got := Conflicts(err)
	if len(got) != 2 || got[0].Field != ".spec.replicas" || got[0].Manager != "kube-controller-manager" ||
		got[1].Field != ".spec.template.spec.tolerations" || got[1].Manager != "kubectl" {
		t.Fatalf("conflicts: %+v", got)
	}
	if Conflicts(apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, "x")) != nil {
		t.Fatal("a not-found error has no conflicts")
	}
	p := Preview{Object: "Deployment/ns/d", Conflicts: got, Unmanaged: []Change{{Path: `spec.template.spec.volumes["name=logs"]`, Live: `{"name":"logs"}`, Want: absent}}}
	text := p.ConflictText()
	for _, s := range []string{"spec.replicas", "kube-controller-manager", `volumes["name=logs"]: {"name":"logs"} → (absent)`} {
		if !strings.Contains(text, s) {
			t.Errorf("conflict text lacks %q:\n%s", s, text)
		}
	}
}

func TestLeafPaths(t *testing.T) {
	obj := map[string]any{"metadata": map[string]any{"name": "x", "labels": map[string]any{"a.b/c": "1"}},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "main", "image": "i", "args": []any{"a"},
				"volumeMounts": []any{map[string]any{"name": "v", "mountPath": "/a"}, map[string]any{"name": "v", "mountPath": "/b", "subPath": "b"}}}},
			"volumes": []any{map[string]any{"name": "v", "emptyDir": map[string]any{}}},
		}}}}
	want := []string{
		`metadata.labels["a.b/c"]`,
		`spec.template.spec.containers["name=main"].args`,
		`spec.template.spec.containers["name=main"].image`,
		`spec.template.spec.containers["name=main"].name`,
		`spec.template.spec.containers["name=main"].volumeMounts["mountPath=/a"].mountPath`,
		`spec.template.spec.containers["name=main"].volumeMounts["mountPath=/a"].name`,
		`spec.template.spec.containers["name=main"].volumeMounts["mountPath=/b"].mountPath`,
		`spec.template.spec.containers["name=main"].volumeMounts["mountPath=/b"].name`,
		`spec.template.spec.containers["name=main"].volumeMounts["mountPath=/b"].subPath`,
		`spec.template.spec.volumes["name=v"].emptyDir`,
		`spec.template.spec.volumes["name=v"].name`,
	}
	if got := LeafPaths(obj); !slices.Equal(got, want) {
		t.Fatalf("got\n%s", strings.Join(got, "\n"))
	}
	if !Covered(`spec.template.spec.volumes["name=v"].emptyDir.medium`, want) || Covered(`spec.template.spec.volumes["name=w"]`, want) {
		t.Fatal("Covered")
	}
}

func TestManagedChange(t *testing.T) {
	pats := [][]string{pathSegments("spec.replicas"), pathSegments(`spec.template.spec.containers["name=main"].image`)}
	for _, c := range []struct {
		ch   Change
		want bool
	}{
		{Change{Path: "spec.replicas", Live: "1", Want: "2"}, true},
		{Change{Path: `spec.template.spec.containers["name=main"]`, Live: absent, Want: "{}"}, true},       // added, and written
		{Change{Path: `spec.template.spec.containers["name=main"]`, Live: "{}", Want: absent}, true},       // removed, was written
		{Change{Path: `spec.template.spec.containers["name=main"].args`, Live: "[]", Want: absent}, false}, // dropped inside a written element
		{Change{Path: `spec.template.spec.containers["name=side"]`, Live: "{}", Want: absent}, false},
		{Change{Path: `spec.template.spec`, Live: "{}", Want: "{}"}, false},
	} {
		if got := managedChange(c.ch, pats); got != c.want {
			t.Errorf("%s %s → %s: managed %v, want %v", c.ch.Path, c.ch.Live, c.ch.Want, got, c.want)
		}
	}
}

func TestChangedPaths(t *testing.T) {
	prior := map[string]any{"metadata": map[string]any{"name": "x", "resourceVersion": "1"}, "spec": map[string]any{
		"replicas": int64(1),
		"groups": []any{
			map[string]any{"name": "a", "size": int64(1)},
			map[string]any{"name": "b", "size": int64(2)},
		}}}
	planned := map[string]any{"metadata": map[string]any{"name": "x", "resourceVersion": "2"}, "spec": map[string]any{
		"replicas": int64(2),
		"groups": []any{
			map[string]any{"name": "a", "size": int64(1)},
			map[string]any{"name": "c", "size": int64(2)},
		}}}
	got := ChangedPaths(prior, planned)
	want := []string{`spec.groups["name=b"]`, `spec.groups["name=c"]`, "spec.replicas"}
	if !slices.Equal(got, want) {
		t.Fatalf("ChangedPaths = %q, want %q", got, want)
	}
	if got := ChangedPaths(prior, prior); len(got) != 0 {
		t.Fatalf("ChangedPaths of an object with itself = %q", got)
	}
}
