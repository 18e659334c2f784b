package object

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestTolerationsRoundTrip(t *testing.T) {
	in := []Toleration{
		{Key: types.StringValue("nvidia.com/gpu"), Operator: types.StringValue("Exists"), Effect: types.StringValue("NoSchedule")},
		{Key: types.StringValue("maintenance"), Operator: types.StringValue("Equal"), Value: types.StringValue("soon"),
			Effect: types.StringValue("NoExecute"), TolerationSeconds: types.Int64Value(300)},
	}
	obj := TolerationsToObject(in)
	want := []any{
		map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
		map[string]any{"key": "maintenance", "operator": "Equal", "value": "soon", "effect": "NoExecute", "tolerationSeconds": int64(300)},
	}
	if !reflect.DeepEqual(obj, want) {
		t.Fatalf("to object: %v, want %v", obj, want)
	}
	if got := TolerationsFromObject(obj); !reflect.DeepEqual(got, in) {
		t.Errorf("from object: %+v, want %+v", got, in)
	}
	// The user's empty key (the server omits it) and empty list survive a read.
	prior := []Toleration{{Key: types.StringValue(""), Operator: types.StringValue("Exists")}}
	if got := ReadTolerations([]any{map[string]any{"operator": "Exists"}}, prior); !reflect.DeepEqual(got, prior) {
		t.Errorf("read with prior: %+v, want %+v", got, prior)
	}
	if got := ReadTolerations(nil, []Toleration{}); got == nil || len(got) != 0 {
		t.Errorf("an empty list read back as %#v", got)
	}
	if got := TolerationsToObject(nil); got != nil {
		t.Errorf("nil tolerations give %#v", got)
	}
}

func TestTaintsRoundTrip(t *testing.T) {
	in := []Taint{{Key: types.StringValue("nvidia.com/gpu"), Value: types.StringValue("present"), Effect: types.StringValue("NoSchedule")},
		{Key: types.StringValue("dedicated"), Effect: types.StringValue("NoExecute")}}
	obj := TaintsToObject(in)
	if got := TaintsFromObject(obj); !reflect.DeepEqual(got, in) {
		t.Errorf("taints: %+v, want %+v", got, in)
	}
}

func TestCheckToleration(t *testing.T) {
	s, null, unknown := types.StringValue, types.StringNull(), types.StringUnknown()
	p := path.Root("tolerations").AtListIndex(0)
	for name, c := range map[string]struct {
		t    Toleration
		want string // the attribute named, "" for none
	}{
		"exists without key":          {Toleration{Key: null, Operator: s("Exists")}, ""},
		"equal without key":           {Toleration{Key: null, Operator: s("Equal")}, "tolerations[0].operator"},
		"default operator, no key":    {Toleration{Key: s(""), Operator: null}, "tolerations[0].operator"},
		"unknown key":                 {Toleration{Key: unknown, Operator: null}, ""},
		"value with exists":           {Toleration{Key: s("k"), Operator: s("Exists"), Value: s("v")}, "tolerations[0].value"},
		"empty value with exists":     {Toleration{Key: s("k"), Operator: s("Exists"), Value: s("")}, ""},
		"seconds with NoSchedule":     {Toleration{Key: s("k"), Operator: s("Exists"), Effect: s("NoSchedule"), TolerationSeconds: types.Int64Value(5)}, "tolerations[0].toleration_seconds"},
		"seconds with no effect":      {Toleration{Key: s("k"), Operator: s("Exists"), TolerationSeconds: types.Int64Value(5)}, "tolerations[0].toleration_seconds"},
		"seconds with NoExecute":      {Toleration{Key: s("k"), Operator: s("Exists"), Effect: s("NoExecute"), TolerationSeconds: types.Int64Value(5)}, ""},
		"seconds with unknown effect": {Toleration{Key: s("k"), Effect: unknown, TolerationSeconds: types.Int64Value(5)}, ""},
	} {
		d := CheckToleration(p, c.t)
		switch {
		case c.want == "" && d.HasError():
			t.Errorf("%s: unexpected %v", name, d)
		case c.want != "" && (len(d) != 1 || !strings.HasPrefix(d[0].(interface{ Path() path.Path }).Path().String(), c.want)):
			t.Errorf("%s: %v, want one error at %s", name, d, c.want)
		}
	}
}

// The schema's element validator reports with the path in the text, as the
// engine's Validate does.
func TestTolerationValidatorNamesPath(t *testing.T) {
	attr := TolerationsAttribute("x")
	typ := attr.NestedObject.Type().(types.ObjectType)
	obj, d := types.ObjectValueFrom(context.Background(), typ.AttributeTypes(), Toleration{
		Key: types.StringNull(), Operator: types.StringValue("Equal"), Value: types.StringValue("v"),
		Effect: types.StringNull(), TolerationSeconds: types.Int64Null(),
	})
	if d.HasError() {
		t.Fatal(d)
	}
	p := path.Root("worker_groups").AtListIndex(0).AtName("tolerations").AtListIndex(0)
	var resp validator.ObjectResponse
	for _, v := range attr.NestedObject.Validators {
		v.ValidateObject(context.Background(), validator.ObjectRequest{Path: p, ConfigValue: obj}, &resp)
	}
	if resp.Diagnostics.ErrorsCount() != 1 ||
		!strings.HasPrefix(resp.Diagnostics[0].Detail(), "worker_groups[0].tolerations[0].operator: A toleration without key") {
		t.Errorf("diagnostics %v", resp.Diagnostics)
	}
}
