package object

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

func TestSameExceptUnknown(t *testing.T) {
	group := tftypes.Object{AttributeTypes: map[string]tftypes.Type{"name": tftypes.String, "replicas": tftypes.Number}}
	typ := tftypes.Object{AttributeTypes: map[string]tftypes.Type{
		"ready":  tftypes.Number,
		"groups": tftypes.List{ElementType: group},
	}}
	val := func(ready any, replicas int) tftypes.Value {
		r := tftypes.NewValue(tftypes.Number, ready)
		if ready == tftypes.UnknownValue {
			r = tftypes.NewValue(tftypes.Number, tftypes.UnknownValue)
		}
		return tftypes.NewValue(typ, map[string]tftypes.Value{
			"ready": r,
			"groups": tftypes.NewValue(tftypes.List{ElementType: group}, []tftypes.Value{
				tftypes.NewValue(group, map[string]tftypes.Value{
					"name": tftypes.NewValue(tftypes.String, "gpu"), "replicas": tftypes.NewValue(tftypes.Number, replicas),
				}),
			}),
		})
	}
	state := val(3, 3)
	for _, c := range []struct {
		name string
		plan tftypes.Value
		want bool
	}{
		{"identical", val(3, 3), true},
		{"computed unknown, the rest equal", val(tftypes.UnknownValue, 3), true},
		{"computed unknown and a configured change", val(tftypes.UnknownValue, 1), false},
		{"known change", val(2, 3), false},
	} {
		if got := sameExceptUnknown(c.plan, state); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
