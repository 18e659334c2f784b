package object

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// Helpers that map between Terraform values and an object's unstructured
// fields. Reads take the prior value so that spellings the server treats as
// equal ("1" and "1000m", an empty map and no map) keep the user's spelling.

// Field returns obj[k1][k2]… or nil.
func Field(obj map[string]any, keys ...string) any {
	var cur any = obj
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

// Fields returns the map at obj[k1][k2]… or nil.
func Fields(obj map[string]any, keys ...string) map[string]any {
	m, _ := Field(obj, keys...).(map[string]any)
	return m
}

// List returns the list at obj[k1][k2]… or nil.
func List(obj map[string]any, keys ...string) []any {
	list, _ := Field(obj, keys...).([]any)
	return list
}

// Items returns the list at obj[k1][k2]… as maps.
func Items(obj map[string]any, keys ...string) []map[string]any {
	return maps(List(obj, keys...))
}

// String reads a string field; absent or empty is null, unless the prior value
// was the empty string.
func String(v any, prior types.String) types.String {
	s, ok := v.(string)
	if !ok || s == "" {
		if !prior.IsNull() && !prior.IsUnknown() && prior.ValueString() == "" {
			return prior
		}
		return types.StringNull()
	}
	return types.StringValue(s)
}

// Int64 reads an integer field (JSON numbers arrive as int64 or float64).
func Int64(v any) types.Int64 {
	switch n := v.(type) {
	case int64:
		return types.Int64Value(n)
	case int:
		return types.Int64Value(int64(n))
	case float64:
		return types.Int64Value(int64(n))
	}
	return types.Int64Null()
}

// Quantity reads a quantity field. When it equals the prior value the prior
// spelling is kept.
func Quantity(v any, prior types.String) types.String {
	var text string
	switch q := v.(type) {
	case string:
		text = q
	case int64, float64:
		text = fmt.Sprint(q)
	default:
		return types.StringNull()
	}
	// The bounded parser: a live value such as "8e22222222222" must not hang a refresh.
	live, err := validators.ParseQuantity(text)
	if err != nil {
		return types.StringValue(text) // shown as drift, as written
	}
	if !prior.IsNull() && !prior.IsUnknown() {
		if p, err := validators.ParseQuantity(prior.ValueString()); err == nil && p.Cmp(live) == 0 {
			return prior
		}
	}
	return types.StringValue(text)
}

// StringMap reads a map of strings. An absent or empty map is null, unless the
// prior value was an empty map.
func StringMap(v any, prior types.Map) types.Map {
	m, _ := v.(map[string]any)
	if len(m) == 0 {
		if !prior.IsNull() && !prior.IsUnknown() && len(prior.Elements()) == 0 {
			return prior
		}
		return types.MapNull(types.StringType)
	}
	elems := make(map[string]attr.Value, len(m))
	for k, val := range m {
		elems[k] = types.StringValue(fmt.Sprint(val))
	}
	return types.MapValueMust(types.StringType, elems)
}

// StringList reads a list of strings. An absent or empty list is null unless the
// prior value was an empty list.
func StringList(v any, prior []types.String) []types.String {
	list, _ := v.([]any)
	if len(list) == 0 {
		if prior != nil && len(prior) == 0 {
			return prior
		}
		return nil
	}
	out := make([]types.String, len(list))
	for i, it := range list {
		out[i] = types.StringValue(fmt.Sprint(it))
	}
	return out
}

// MapOut converts a known map of strings for an object; null gives nil.
func MapOut(m types.Map) map[string]any {
	if m.IsNull() || m.IsUnknown() {
		return nil
	}
	out := make(map[string]any, len(m.Elements()))
	for k, v := range m.Elements() {
		if s, ok := v.(types.String); ok {
			out[k] = s.ValueString()
		}
	}
	return out
}

// ListOut converts strings for an object.
func ListOut(l []types.String) []any {
	if l == nil {
		return nil
	}
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s.ValueString()
	}
	return out
}

// Put sets m[k] = v when v carries a value (non-nil, non-empty string).
func Put(m map[string]any, k string, v any) {
	switch x := v.(type) {
	case nil:
		return
	case string:
		if x == "" {
			return
		}
	case map[string]any:
		if x == nil {
			return
		}
	case []any:
		if x == nil {
			return
		}
	case types.String:
		if x.IsNull() || x.IsUnknown() {
			return
		}
		v = x.ValueString()
	case types.Int64:
		if x.IsNull() || x.IsUnknown() {
			return
		}
		v = x.ValueInt64()
	case types.Bool:
		if x.IsNull() || x.IsUnknown() {
			return
		}
		v = x.ValueBool()
	}
	m[k] = v
}

// Labels converts a known map of strings (labels, selectors) to Go; null gives
// an empty map.
func Labels(m types.Map) map[string]string {
	out := map[string]string{}
	for k, v := range MapOut(m) {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// SelectorString prints a label selector as {k=v, …}, sorted, for messages.
func SelectorString(m map[string]string) string {
	if len(m) == 0 {
		return "{} (every node)"
	}
	parts := make([]string, 0, len(m))
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ", ") + "}"
}

// Known is true when v carries a value: neither null nor unknown.
func Known(v interface {
	IsNull() bool
	IsUnknown() bool
}) bool {
	return !v.IsNull() && !v.IsUnknown()
}
