package serving

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// The picker's args as the resource writes them read back into the same
// attributes: the managed flags are not picker_args.
func TestPickerArgsRoundTrip(t *testing.T) {
	m := &inferencePoolModel{Port: types.Int64Value(9002), Secure: types.BoolValue(false), LogLevel: types.Int64Value(4),
		Args: []types.String{types.StringValue("--zap-encoder=json")}}
	m.Name, m.Namespace = types.StringValue("p"), types.StringValue("ns")
	live := append(m.pickerManagedArgs(), "--zap-encoder=json")
	var got inferencePoolModel
	got.Args = []types.String{}
	var in []types.String
	for _, a := range live {
		in = append(in, types.StringValue(a))
	}
	readPickerArgs(in, &got)
	if got.Secure.ValueBool() || got.LogLevel.ValueInt64() != 4 || len(got.Args) != 1 || got.Args[0].ValueString() != "--zap-encoder=json" {
		t.Errorf("read back: secure %v, log level %v, args %v", got.Secure, got.LogLevel, got.Args)
	}
}

// Every flag the picker accepts is either the user's or named by the
// attribute that sets it; picker_args refuses the others with the path.
func TestValidatePickerArgs(t *testing.T) {
	m := &inferencePoolModel{Selector: types.MapValueMust(types.StringType, map[string]attr.Value{"app": types.StringValue("x")}),
		Port: types.Int64Value(9090),
		Args: []types.String{types.StringValue("--health-checking=true"), types.StringValue("--config-file=/x"), types.StringValue("--grpc-port=1")}}
	m.NamespacedMeta.Name = types.StringValue("p")
	diags := validateInferencePool(m)
	var text []string
	for _, d := range diags {
		text = append(text, d.Summary()+": "+d.Detail())
	}
	all := strings.Join(text, "\n")
	for _, want := range []string{"Picker port taken: 9090 is the picker's metrics port", `Unknown picker flag: "--config-file"`, "--grpc-port is set by picker_port"} {
		if !strings.Contains(all, want) {
			t.Errorf("diagnostics lack %q:\n%s", want, all)
		}
	}
	if len(diags) != 3 {
		t.Errorf("%d diagnostics, want 3:\n%s", len(diags), all)
	}
}
