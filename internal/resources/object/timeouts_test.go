package object

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		10 * time.Minute: "10m", 5 * time.Minute: "5m", 90 * time.Second: "1m30s", time.Hour: "1h", 90 * time.Minute: "1h30m", 2 * time.Second: "2s",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}

// The block has delete always, create and update only where the apply
// waits; each description names its default.
func TestTimeoutsBlock(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		apply, del time.Duration
		want       map[string]string
	}{
		{0, DefaultDeleteTimeout, map[string]string{"delete": "Default `\"5m\"`"}},
		{10 * time.Minute, DefaultDeleteTimeout, map[string]string{"create": "Default `\"10m\"`", "update": "Default `\"10m\"`", "delete": "Default `\"5m\"`"}},
	} {
		b := TimeoutsBlock(ctx, "Thing", c.apply, c.del).(schema.SingleNestedBlock)
		if len(b.Attributes) != len(c.want) {
			t.Errorf("apply %v: attributes %v, want %v", c.apply, b.Attributes, c.want)
		}
		for name, sub := range c.want {
			a, ok := b.Attributes[name]
			if !ok || !strings.Contains(a.GetDescription(), sub) || !a.IsOptional() {
				t.Errorf("apply %v: %s = %+v, want an optional attribute whose description has %q", c.apply, name, a, sub)
			}
		}
	}
}

func timeoutsValue(vals map[string]string) timeouts.Value {
	types_ := map[string]attr.Type{"create": types.StringType, "update": types.StringType, "delete": types.StringType}
	v := map[string]attr.Value{"create": types.StringNull(), "update": types.StringNull(), "delete": types.StringNull()}
	for k, s := range vals {
		v[k] = types.StringValue(s)
	}
	return timeouts.Value{Object: types.ObjectValueMust(types_, v)}
}

// Unset (no block, or the attribute not set) is the default; a set value wins.
func TestTimeoutFor(t *testing.T) {
	ctx := context.Background()
	def := 10 * time.Minute
	for _, c := range []struct {
		name string
		v    timeouts.Value
		op   string
		want time.Duration
	}{
		{"no block", NullTimeouts(true), "create", def},
		{"zero value", timeouts.Value{}, "update", def},
		{"other set", timeoutsValue(map[string]string{"create": "1m"}), "update", def},
		{"create", timeoutsValue(map[string]string{"create": "2s"}), "create", 2 * time.Second},
		{"update", timeoutsValue(map[string]string{"update": "1h"}), "update", time.Hour},
		{"delete", timeoutsValue(map[string]string{"delete": "30s"}), "delete", 30 * time.Second},
	} {
		got, diags := TimeoutFor(ctx, c.v, c.op, def)
		if diags.HasError() || got != c.want {
			t.Errorf("%s: %v %v, want %v", c.name, got, diags, c.want)
		}
	}
}

func TestBudget(t *testing.T) {
	ctx := context.Background()
	if Budget(ctx, time.Minute) != time.Minute || !strings.Contains(TimeoutHint(ctx), "create") {
		t.Errorf("without a budget: %v, %q", Budget(ctx, time.Minute), TimeoutHint(ctx))
	}
	bctx, cancel := WithBudget(ctx, "update", 3*time.Second)
	defer cancel()
	if _, ok := bctx.Deadline(); !ok || Budget(bctx, time.Minute) != 3*time.Second ||
		TimeoutHint(bctx) != "Give it more time with `timeouts { update = \"…\" }`." {
		t.Errorf("with a budget: %v, %q", Budget(bctx, time.Minute), TimeoutHint(bctx))
	}
}

// Every object resource has the block: delete by default, create and
// update with ApplyTimeout; the defaults are the durations the code used.
func TestObjectResourceTimeouts(t *testing.T) {
	ctx := context.Background()
	kind := kube.Kind{Group: "x", Version: "v1", Resource: "things", Kind: "Thing"}
	for _, c := range []struct {
		spec Spec[assertModel]
		want []string
	}{
		{Spec[assertModel]{TypeName: "thing", Kind: kind}, []string{"delete"}},
		{Spec[assertModel]{TypeName: "thing", Kind: kind, ApplyTimeout: 10 * time.Minute,
			AfterApply: func(context.Context, *kube.Client, *assertModel) diag.Diagnostics { return nil }}, []string{"create", "delete", "update"}},
	} {
		var resp resource.SchemaResponse
		New[assertModel](c.spec).Schema(ctx, resource.SchemaRequest{}, &resp)
		if d := resp.Schema.ValidateImplementation(ctx); d.HasError() {
			t.Fatal(d)
		}
		b, ok := resp.Schema.Blocks["timeouts"].(schema.SingleNestedBlock)
		if !ok {
			t.Fatalf("no timeouts block: %v", resp.Schema.Blocks)
		}
		var got []string
		for _, k := range []string{"create", "delete", "update"} {
			if _, ok := b.Attributes[k]; ok {
				got = append(got, k)
			}
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("ApplyTimeout %v: timeouts %v, want %v", c.spec.ApplyTimeout, got, c.want)
		}
	}
	if r := (&Resource[assertModel, *assertModel]{}); r.deleteTimeout() != 5*time.Minute {
		t.Errorf("delete default %v", r.deleteTimeout())
	}
}

func TestOutOfTime(t *testing.T) {
	live := context.Background()
	ended, cancel := context.WithCancel(live)
	cancel()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want bool
	}{
		{live, nil, false},
		{live, errors.New("forbidden"), false},
		{live, errors.New("rate: Wait(n=1) would exceed context deadline"), true},
		{live, fmt.Errorf("waiting: %w", context.DeadlineExceeded), true},
		{ended, errors.New("anything"), true},
	} {
		if got := OutOfTime(c.ctx, c.err); got != c.want {
			t.Errorf("OutOfTime(%v, %v) = %v", c.ctx.Err(), c.err, got)
		}
	}
}

// timeouts.<op> wins; the deprecated timeout fills in what the block leaves
// unset; the resource's default when neither says anything (or the
// deprecated value is not a duration, which its validator refuses at plan).
func TestOperationTimeout(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		block  map[string]string
		legacy types.String
		op     string
		want   time.Duration
	}{
		{nil, types.StringNull(), "create", 10 * time.Minute},
		{nil, types.StringValue("3m"), "create", 3 * time.Minute},
		{nil, types.StringValue("3m"), "delete", 3 * time.Minute},
		{map[string]string{"create": "1s"}, types.StringValue("3m"), "create", time.Second},
		{map[string]string{"create": "1s"}, types.StringValue("3m"), "update", 3 * time.Minute},
		{map[string]string{"delete": "2m"}, types.StringNull(), "update", 10 * time.Minute},
		{map[string]string{"delete": "2m"}, types.StringNull(), "delete", 2 * time.Minute},
		{nil, types.StringValue("soon"), "create", 10 * time.Minute},
	} {
		block := timeouts.Value{Object: types.ObjectNull(timeoutsValue(nil).AttributeTypes(ctx))}
		if c.block != nil {
			block = timeoutsValue(c.block)
		}
		got, diags := OperationTimeout(ctx, block, c.op, c.legacy, 10*time.Minute)
		if diags.HasError() || got != c.want {
			t.Errorf("block %v, timeout %v, %s: %v %v, want %v", c.block, c.legacy, c.op, got, diags, c.want)
		}
		if set := TimeoutSet(block, c.op); set != (c.block[c.op] != "") {
			t.Errorf("block %v: TimeoutSet(%s) = %v", c.block, c.op, set)
		}
	}
}
