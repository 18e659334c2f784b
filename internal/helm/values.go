package helm

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// ParseValues parses a raw `values` YAML document; empty is no values.
func ParseValues(doc string) (map[string]any, error) {
	out := map[string]any{}
	if strings.TrimSpace(doc) == "" {
		return out, nil
	}
	if err := yaml.Unmarshal([]byte(doc), &out); err != nil {
		return nil, fmt.Errorf("values is not a YAML map: %w", err)
	}
	if out == nil {
		out = map[string]any{}
	}
	return out, nil
}

// Merge deep-merges overlay into base (overlay wins; maps merge, everything
// else is replaced) and returns base.
func Merge(base, overlay map[string]any) map[string]any {
	if base == nil {
		base = map[string]any{}
	}
	for k, v := range overlay {
		if om, ok := v.(map[string]any); ok {
			if bm, ok := base[k].(map[string]any); ok {
				base[k] = Merge(maps.Clone(bm), om)
				continue
			}
		}
		base[k] = v
	}
	return base
}

// SetPath sets values[a][b]… = v, creating maps on the way.
func SetPath(values map[string]any, v any, path ...string) {
	cur := values
	for _, k := range path[:len(path)-1] {
		next, ok := cur[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[k] = next
		}
		cur = next
	}
	cur[path[len(path)-1]] = v
}

// GetPath returns values[a][b]… or nil.
func GetPath(values map[string]any, path ...string) any {
	var cur any = values
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

// ParseDuration accepts Go durations for `timeout` attributes.
func ParseDuration(s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as \"5m\" or \"90s\"", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: the timeout must be positive", s)
	}
	return d, nil
}
