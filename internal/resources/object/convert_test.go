package object

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestQuantityKeepsEqualSpelling(t *testing.T) {
	cases := []struct {
		live  any
		prior types.String
		want  types.String
	}{
		{"64", types.StringValue("64000m"), types.StringValue("64000m")},
		{"1Gi", types.StringValue("1024Mi"), types.StringValue("1024Mi")},
		{"2", types.StringValue("1"), types.StringValue("2")}, // drift shows
		{int64(8), types.StringNull(), types.StringValue("8")},
		{nil, types.StringValue("1"), types.StringNull()}, // removed out of band
		{"500m", types.StringNull(), types.StringValue("500m")},
	}
	for _, c := range cases {
		if got := Quantity(c.live, c.prior); !got.Equal(c.want) {
			t.Errorf("Quantity(%v, %v) = %v, want %v", c.live, c.prior, got, c.want)
		}
	}
}

func TestEmptyVersusAbsent(t *testing.T) {
	empty := types.MapValueMust(types.StringType, map[string]attr.Value{})
	if got := StringMap(nil, empty); !got.Equal(empty) {
		t.Errorf("an empty map the user wrote must stay empty, got %v", got)
	}
	if got := StringMap(map[string]any{}, types.MapNull(types.StringType)); !got.IsNull() {
		t.Errorf("absent must read as null, got %v", got)
	}
	if got := String("", types.StringValue("")); got.IsNull() {
		t.Errorf("an empty string the user wrote must stay empty")
	}
	if got := StringList(nil, []types.String{}); got == nil {
		t.Errorf("an empty list the user wrote must stay empty")
	}
	if got := StringList([]any{}, nil); got != nil {
		t.Errorf("absent list must read as null")
	}
}
