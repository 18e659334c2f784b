package podtemplate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	corev1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// The overlay (pod_template) and the JSON-valued attributes (affinity):
// decoded strictly against the API type at plan time, carried as
// unstructured maps, merged under the typed fields, and read back by
// projecting the live object onto the overlay's own fields.

type (
	affinity    = corev1.Affinity
	podTemplate = corev1.PodTemplateSpec
)

// Decode parses YAML or JSON into an unstructured map after checking it
// strictly against T: an unknown or duplicate field is an error naming its
// path, e.g. `unknown field "spec.containers[0].imagePullPolicyy"`.
func Decode[T any](text string) (map[string]any, error) {
	data, err := yaml.YAMLToJSONStrict([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("not valid YAML or JSON: %w", err)
	}
	var typed T
	strict, err := kjson.UnmarshalStrict(data, &typed, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	var out map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &out); err != nil {
		return nil, err
	}
	if out == nil {
		return nil, fmt.Errorf("must be an object")
	}
	return out, nil
}

type strictCheck[T any] struct{ what string }

// Strict validates a string attribute holding YAML or JSON of T.
func Strict[T any](what string) validator.String { return strictCheck[T]{what} }

// Overlay validates pod_template: a PodTemplateSpec.
func Overlay() validator.String { return strictCheck[podTemplate]{"a PodTemplateSpec"} }

func (v strictCheck[T]) Description(context.Context) string {
	return "YAML or JSON of " + v.what + ", with the API's field names"
}
func (v strictCheck[T]) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v strictCheck[T]) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := Decode[T](req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid "+v.what,
			fmt.Sprintf("%s: is not %s: %v", req.Path, v.what, err))
	}
}

// mergeKeys names the elements of the pod template's lists that are merged
// element by element (the API's merge keys); other lists are replaced whole.
var mergeKeys = map[string]string{
	"containers": "name", "initContainers": "name", "ephemeralContainers": "name",
	"volumes": "name", "env": "name", "imagePullSecrets": "name",
	"ports": "containerPort", "volumeMounts": "mountPath",
}

// merge returns base with top laid over it: maps merged key by key, lists
// with a merge key element by element (top's elements first, in order, then
// base's others), anything else taken from top. Neither input is changed.
func merge(base, top any, field string) any {
	switch t := top.(type) {
	case map[string]any:
		b, ok := base.(map[string]any)
		if !ok {
			return deepCopy(t)
		}
		out := make(map[string]any, len(b)+len(t))
		for k, v := range b {
			out[k] = deepCopy(v)
		}
		for k, v := range t {
			out[k] = merge(b[k], v, k)
		}
		return out
	case []any:
		b, ok := base.([]any)
		key := mergeKeys[field]
		if !ok || key == "" {
			return deepCopy(t)
		}
		out := make([]any, 0, len(t)+len(b))
		used := map[string]bool{}
		for _, el := range t {
			k := elementKey(el, key)
			if match := find(b, key, k); match != nil && k != "" {
				out = append(out, merge(match, el, ""))
				used[k] = true
				continue
			}
			out = append(out, deepCopy(el))
		}
		for _, el := range b {
			if k := elementKey(el, key); k == "" || !used[k] {
				out = append(out, deepCopy(el))
			}
		}
		return out
	case nil:
		return deepCopy(base)
	}
	return top
}

func elementKey(el any, key string) string {
	m, ok := el.(map[string]any)
	if !ok || m[key] == nil {
		return ""
	}
	return fmt.Sprint(m[key])
}

func find(list []any, key, value string) map[string]any {
	if value == "" {
		return nil
	}
	for _, el := range list {
		if elementKey(el, key) == value {
			return el.(map[string]any)
		}
	}
	return nil
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// overlaps lists the field paths the overlay sets that typed sets too, e.g.
// spec.containers[name=main].image: the typed attribute would always win,
// so the overlay's value could never be applied.
func overlaps(overlay, typed any, path, field string) []string {
	switch o := overlay.(type) {
	case map[string]any:
		t, ok := typed.(map[string]any)
		if !ok || len(o) == 0 { // {} sets the field as a whole
			if typed != nil {
				return []string{path}
			}
			return nil
		}
		var out []string
		for k, v := range o {
			if tv, ok := t[k]; ok {
				out = append(out, overlaps(v, tv, join(path, k), k)...)
			}
		}
		return out
	case []any:
		t, ok := typed.([]any)
		key := mergeKeys[field]
		if !ok || key == "" {
			if typed != nil {
				return []string{path}
			}
			return nil
		}
		var out []string
		for _, el := range o {
			k := elementKey(el, key)
			match := find(t, key, k)
			if match == nil {
				continue
			}
			elPath := fmt.Sprintf("%s[%s=%s]", path, key, k)
			m := el.(map[string]any)
			for f, v := range m {
				if f == key {
					continue
				}
				if tv, ok := match[f]; ok {
					out = append(out, overlaps(v, tv, join(elPath, f), f)...)
				}
			}
		}
		return out
	}
	if typed != nil {
		return []string{path}
	}
	return nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// project returns the live values at the fields overlay sets: named list
// elements are matched by their merge key, absent fields are left out.
func project(overlay, live any, field string) any {
	switch o := overlay.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return nil
		}
		out := map[string]any{}
		for k, v := range o {
			lv, ok := l[k]
			if !ok {
				continue
			}
			if p := project(v, lv, k); p != nil {
				out[k] = p
			}
		}
		return out
	case []any:
		l, ok := live.([]any)
		key := mergeKeys[field]
		if !ok || key == "" {
			return deepCopy(live)
		}
		var out []any
		for _, el := range o {
			k := elementKey(el, key)
			match := find(l, key, k)
			if match == nil {
				continue
			}
			p, _ := project(el, match, "").(map[string]any)
			if p == nil {
				p = map[string]any{}
			}
			p[key] = match[key]
			out = append(out, p)
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return deepCopy(live)
}

// equivalent compares decoded documents, numbers by value and strings that
// are both quantities by amount ("1000m" and "1").
func equivalent(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !equivalent(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equivalent(x[i], y[i]) {
				return false
			}
		}
		return true
	case string:
		y, ok := b.(string)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		qa, ea := validators.ParseQuantity(x)
		qb, eb := validators.ParseQuantity(y)
		return ea == nil && eb == nil && qa.Cmp(qb) == 0
	}
	return kube.SameValue(a, b)
}

// readDocument returns prior when live (the decoded live value) is
// equivalent to the document prior holds, else live as YAML (JSON when the
// prior was JSON), so that a change shows as a diff of the attribute.
func readDocument(prior string, priorDoc, live any) (string, bool) {
	if live == nil {
		return "", false
	}
	if priorDoc != nil && equivalent(priorDoc, live) {
		return prior, true
	}
	if strings.HasPrefix(strings.TrimSpace(prior), "{") || prior == "" {
		b, err := json.Marshal(live)
		if err != nil {
			return "", false
		}
		return string(b), true
	}
	b, err := yaml.Marshal(live)
	if err != nil {
		return "", false
	}
	return string(b), true
}
