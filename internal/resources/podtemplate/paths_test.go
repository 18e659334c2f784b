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
