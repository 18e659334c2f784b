package kube

import (
	"slices"
	"testing"
)

func TestCompare(t *testing.T) {
	live := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "resourceVersion": "9", "uid": "u", "managedFields": []any{"x"},
			"annotations": map[string]any{"a.b/c": "1"}},
		"data": map[string]any{
			"config.yaml": "integrations:\n  frameworks: [batch/job, pod]\nkeep: 1\n",
			"plain":       "x",
		},
		"status": map[string]any{"ready": true},
	}
	want := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "resourceVersion": "10", "annotations": map[string]any{"a.b/c": "2"}},
		"data": map[string]any{
			// same document, other formatting and key order, one change
			"config.yaml": "keep: 1\nintegrations:\n  frameworks:\n  - batch/job\n",
			"plain":       "x",
		},
	}
	var got []string
	for _, c := range Compare(live, want, true) {
		got = append(got, c.Path+" "+c.Live+" → "+c.Want)
	}
	wantLines := []string{
		`data["config.yaml"].integrations.frameworks ["batch/job","pod"] → ["batch/job"]`,
		`metadata.annotations["a.b/c"] 1 → 2`,
	}
	if !slices.Equal(got, wantLines) {
		t.Fatalf("got\n%v\nwant\n%v", got, wantLines)
	}
	if c := Compare(live, live, true); len(c) != 0 {
		t.Fatalf("an object differs from itself: %v", c)
	}
	d := ObjectDrift{Object: "Deployment/ns/x", Changes: []Change{{Path: "spec.replicas", Live: "3", Want: "1"}}}
	if l := d.Lines(); len(l) != 1 || l[0] != "Deployment/ns/x: spec.replicas 3 → 1" {
		t.Fatalf("lines: %v", l)
	}
}
