package installs

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// A change of timeouts, timeout or remove_crds alone runs no Helm
// operation; anything else does — also a value unknown in the
// configuration, which only the framework's marking of computed
// attributes may look like.
func TestSettingsOnly(t *testing.T) {
	typ := tftypes.Object{AttributeTypes: map[string]tftypes.Type{
		"version": tftypes.String, "values": tftypes.String, "timeout": tftypes.String, "remove_crds": tftypes.Bool,
		"revision": tftypes.Number, "timeouts": tftypes.Object{AttributeTypes: map[string]tftypes.Type{"create": tftypes.String}},
	}}
	to := tftypes.Object{AttributeTypes: map[string]tftypes.Type{"create": tftypes.String}}
	obj := func(version, values any, timeout string, removeCRDs bool, revision any, create any) tftypes.Value {
		tv := tftypes.NewValue(to, nil)
		if create != nil {
			tv = tftypes.NewValue(to, map[string]tftypes.Value{"create": tftypes.NewValue(tftypes.String, create)})
		}
		return tftypes.NewValue(typ, map[string]tftypes.Value{
			"version": tftypes.NewValue(tftypes.String, version), "values": tftypes.NewValue(tftypes.String, values),
			"timeout": tftypes.NewValue(tftypes.String, timeout), "remove_crds": tftypes.NewValue(tftypes.Bool, removeCRDs),
			"revision": tftypes.NewValue(tftypes.Number, revision), "timeouts": tv,
		})
	}
	state := obj("0.1.0", nil, "10m0s", false, 3, nil)
	for _, c := range []struct {
		name         string
		plan, config tftypes.Value
		want         bool
	}{
		{"timeouts added", obj("0.1.0", nil, "10m0s", false, tftypes.UnknownValue, "1m"), obj("0.1.0", nil, "10m0s", false, nil, "1m"), true},
		{"timeout and remove_crds", obj("0.1.0", nil, "3m", true, tftypes.UnknownValue, nil), obj("0.1.0", nil, "3m", true, nil, nil), true},
		{"version", obj("0.2.0", nil, "10m0s", false, tftypes.UnknownValue, nil), obj("0.2.0", nil, "10m0s", false, nil, nil), false},
		{"values unknown in the configuration", obj("0.1.0", tftypes.UnknownValue, "10m0s", false, tftypes.UnknownValue, nil),
			obj("0.1.0", tftypes.UnknownValue, "10m0s", false, nil, nil), false},
		{"values set", obj("0.1.0", "a: 1", "10m0s", false, tftypes.UnknownValue, nil), obj("0.1.0", "a: 1", "10m0s", false, nil, nil), false},
	} {
		if got := settingsOnly(c.plan, state, c.config); got != c.want {
			t.Errorf("%s: settingsOnly = %v, want %v", c.name, got, c.want)
		}
	}
}
