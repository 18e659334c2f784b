package podtemplate

import (
	"reflect"
	"testing"
)

func TestPaths(t *testing.T) {
	doc := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"a": "b"}},
		"spec": map[string]any{
			"hostIPC":     true,
			"dnsConfig":   map[string]any{},
			"hostAliases": []any{map[string]any{"ip": "127.0.0.1"}},
			"containers": []any{
				map[string]any{"name": "nginx", "lifecycle": map[string]any{"preStop": map[string]any{"exec": map[string]any{"command": []any{"sleep"}}}}},
				map[string]any{"name": "only-named"},
			},
		},
	}
	want := []string{
		"metadata.annotations.a",
		"spec.containers[name=nginx].lifecycle.preStop.exec.command",
		"spec.containers[name=only-named]",
		"spec.dnsConfig",
		"spec.hostAliases",
		"spec.hostIPC",
	}
	if got := Paths(doc); !reflect.DeepEqual(got, want) {
		t.Errorf("Paths = %q\nwant %q", got, want)
	}
	if got := Paths(nil); len(got) != 0 {
		t.Errorf("Paths(nil) = %q", got)
	}
}

// An empty metadata (`metadata: {}`, as manifests often carry it) is no
// remainder: an import puts nothing in pod_template for it.
func TestEmptyMetadataIsNoRemainder(t *testing.T) {
	live := map[string]any{"metadata": map[string]any{}, "spec": map[string]any{"containers": []any{
		map[string]any{"name": "nginx", "image": "nginx:1.27"}}}}
	m := Read(live, nil)
	if r := Remainder(live, m); r != nil || !m.PodTemplate.IsNull() {
		t.Errorf("remainder %v, pod_template %v", r, m.PodTemplate)
	}
}
