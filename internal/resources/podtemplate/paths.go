package podtemplate

import (
	"fmt"
	"sort"
)

// Paths lists the field paths a document sets (a Remainder, an overlay),
// sorted: one per leaf value, elements of named lists as
// `spec.containers[name=nginx].lifecycle.preStop.exec.command`, a list
// without a merge key as one path. For warnings that say what an import
// carried in pod_template or could not carry at all.
func Paths(doc map[string]any) []string {
	var out []string
	if len(doc) == 0 {
		return nil
	}
	paths(doc, "", "", &out)
	sort.Strings(out)
	return out
}

func paths(v any, at, field string, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			*out = append(*out, at)
			return
		}
		for k, e := range x {
			paths(e, join(at, k), k, out)
		}
	case []any:
		key := mergeKeys[field]
		if key == "" {
			*out = append(*out, at)
			return
		}
		for _, el := range x {
			m, ok := el.(map[string]any)
			k := elementKey(el, key)
			if !ok || k == "" {
				*out = append(*out, at)
				continue
			}
			elAt := fmt.Sprintf("%s[%s=%s]", at, key, k)
			n := 0
			for f, e := range m {
				if f != key {
					paths(e, join(elAt, f), f, out)
					n++
				}
			}
			if n == 0 {
				*out = append(*out, elAt)
			}
		}
	default:
		*out = append(*out, at)
	}
}
