package kube

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Drift compared locally. A server-side apply of the desired object (what
// the drift check's dry run does) changes nothing when all of these hold,
// and then the dry run is skipped:
//
//  1. every value the desired object sets is the live one (maps by key, so
//     keys only the live object has — server defaults, other writers' —
//     are left alone as apply leaves them; lists element by element, of the
//     same length);
//  2. no field this manager applied before is missing from the desired
//     object (an apply would remove it);
//  3. no other writer owns a field the desired object sets (an apply with
//     force would take it, and an atomic list or map someone else wrote
//     may hold values the desired one lacks, which the apply would drop).
//
// Anything else — a differing value, a quantity written as 1000m against
// 1, a string the server rewrites — goes to the dry run, which says
// exactly what an apply would change; so the local comparison only ever
// decides "no drift", and what the dry run found before it still finds.
func inSync(desired, live *unstructured.Unstructured) bool {
	for k, wv := range desired.Object {
		switch k {
		case "status":
			continue // not compared (see Compare)
		case "metadata":
			w, _ := wv.(map[string]any)
			l, _ := live.Object[k].(map[string]any)
			for mk, mv := range w {
				if !slices.Contains(ignoredMetadata, mk) && !subset(mv, l[mk]) {
					return false
				}
			}
			continue
		}
		if !subset(wv, live.Object[k]) {
			return false
		}
	}
	want := desired.Object
	for _, e := range live.GetManagedFields() {
		if e.Subresource != "" || e.FieldsV1 == nil {
			continue // status writers: the drift check ignores status
		}
		var set map[string]any
		if err := json.Unmarshal(e.FieldsV1.Raw, &set); err != nil {
			return false
		}
		switch {
		case e.Manager == FieldManager && e.Operation == metav1.ManagedFieldsOperationApply:
			if !covers(want, set) {
				return false // 2: an apply would remove what it no longer sets
			}
		case e.Manager == FieldManager:
			// Helm's creates and updates, under the same name: an apply
			// neither removes nor takes these fields.
		default:
			if overlaps(want, set) {
				return false // 3
			}
		}
	}
	return true
}

// subset reports whether every value want sets is the one live has. An
// empty map or list in want matches an absent one in live (the server
// drops them).
func subset(want, live any) bool {
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if live == nil {
			return len(w) == 0
		}
		if !ok {
			return false
		}
		for k, wv := range w {
			lv, present := l[k]
			if !present {
				if isEmpty(wv) {
					continue
				}
				return false
			}
			if !subset(wv, lv) {
				return false
			}
		}
		return true
	case []any:
		if live == nil {
			return len(w) == 0
		}
		l, ok := live.([]any)
		if !ok || len(l) != len(w) {
			return false
		}
		for i := range w {
			if !subset(w[i], l[i]) {
				return false
			}
		}
		return true
	default:
		return SameValue(want, live)
	}
}

// SameValue compares two decoded JSON or YAML values, numbers by value
// whatever their Go type: a manifest's YAML gives float64 where the
// server's JSON gives int64 (and a json.Decoder with UseNumber a
// json.Number).
func SameValue(a, b any) bool {
	if na, ok := Number(a); ok {
		nb, ok := Number(b)
		return ok && na == nb
	}
	return reflect.DeepEqual(a, b)
}

// Number is a decoded number's value, false for anything else.
func Number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// covers reports whether every field of a managed-fields set is in obj.
func covers(obj any, set map[string]any) bool {
	for key, child := range set {
		if key == "." {
			continue
		}
		v, ok := member(obj, key)
		if !ok {
			return false
		}
		if c, _ := child.(map[string]any); len(c) > 0 && !covers(v, c) {
			return false
		}
	}
	return true
}

// overlaps reports whether obj sets a field that the set owns as a whole
// (a leaf of the set: a scalar, or an atomic list or map).
func overlaps(obj any, set map[string]any) bool {
	for key, child := range set {
		if key == "." {
			continue
		}
		v, ok := member(obj, key)
		if !ok {
			continue
		}
		c, _ := child.(map[string]any)
		if leaf(c) || overlaps(v, c) {
			return true
		}
	}
	return false
}

func leaf(set map[string]any) bool {
	for k := range set {
		if k != "." {
			return false
		}
	}
	return true
}

// member is the part of obj one key of a managed-fields set names:
// f:<field> a map's field, k:<json> the list element with those key
// fields, v:<json> the set element of that value, i:<n> a list index.
func member(obj any, key string) (any, bool) {
	kind, arg, ok := strings.Cut(key, ":")
	if !ok {
		return nil, false
	}
	switch kind {
	case "f":
		m, ok := obj.(map[string]any)
		if !ok {
			return nil, false
		}
		v, ok := m[arg]
		return v, ok
	case "k":
		var keys map[string]any
		if json.Unmarshal([]byte(arg), &keys) != nil {
			return nil, false
		}
		l, _ := obj.([]any)
		for _, e := range l {
			if m, ok := e.(map[string]any); ok && hasKeys(m, keys) {
				return e, true
			}
		}
	case "v":
		var want any
		if json.Unmarshal([]byte(arg), &want) != nil {
			return nil, false
		}
		l, _ := obj.([]any)
		for _, e := range l {
			if SameValue(e, want) {
				return e, true
			}
		}
	case "i":
		var i int
		if json.Unmarshal([]byte(arg), &i) != nil {
			return nil, false
		}
		if l, _ := obj.([]any); i >= 0 && i < len(l) {
			return l[i], true
		}
	}
	return nil, false
}

func hasKeys(m, keys map[string]any) bool {
	for k, v := range keys {
		if !SameValue(m[k], v) {
			return false
		}
	}
	return true
}
