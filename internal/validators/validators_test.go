package validators

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func check(v validator.String, s string) bool {
	var resp validator.StringResponse
	v.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("x"), ConfigValue: types.StringValue(s)}, &resp)
	return !resp.Diagnostics.HasError()
}

func TestQuantity(t *testing.T) {
	for s, ok := range map[string]bool{"8": true, "500m": true, "64Gi": true, "1.5": true, "0": true,
		"1x": false, "-1": false, "": false, " 8": false, "8 ": false, "Gi": false,
		"8e22222222222": false, "1e3": true, "10000000000000000000000000000000": false} {
		if got := check(Quantity(), s); got != ok {
			t.Errorf("Quantity(%q) valid = %v, want %v", s, got, ok)
		}
	}
}

func TestNames(t *testing.T) {
	for s, ok := range map[string]bool{"h100": true, "team-a.queue": true, "H100": false, "a_b": false, "-a": false} {
		if got := check(DNSSubdomain(), s); got != ok {
			t.Errorf("DNSSubdomain(%q) = %v, want %v", s, got, ok)
		}
	}
	for s, ok := range map[string]bool{"default": true, "a.b": false, "Default": false} {
		if got := check(DNSLabel(), s); got != ok {
			t.Errorf("DNSLabel(%q) = %v, want %v", s, got, ok)
		}
	}
	for s, ok := range map[string]bool{"nvidia.com/gpu": true, "cpu": true, "a b": false, "/x": false} {
		if got := check(QualifiedName(), s); got != ok {
			t.Errorf("QualifiedName(%q) = %v, want %v", s, got, ok)
		}
	}
}

func FuzzParseQuantity(f *testing.F) {
	for _, s := range []string{"8", "500m", "64Gi", "1e3", "-1", "1x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParseQuantity(s)
		if err != nil {
			return
		}
		// Whatever parses must survive a round trip through its canonical form.
		back, err := ParseQuantity(q.String())
		if err != nil || back.Cmp(q) != 0 {
			t.Fatalf("%q → %s → %v (%v)", s, q.String(), back.String(), err)
		}
	})
}
