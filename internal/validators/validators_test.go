package validators

import (
	"context"
	"strings"
	"testing"
	"time"

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

func TestDuration(t *testing.T) {
	for s, ok := range map[string]bool{"30s": true, "2m": true, "1h30m": true, "soon": false, "": false, "0s": false, "-5m": false} {
		if got := check(Duration(0, 0), s); got != ok {
			t.Errorf("Duration(0, 0)(%q) = %v, want %v", s, got, ok)
		}
	}
	for s, ok := range map[string]bool{"1m": true, "90m": true, "168h": true, "59s": false, "169h": false} {
		if got := check(Duration(time.Minute, 7*24*time.Hour), s); got != ok {
			t.Errorf("Duration(1m, 168h)(%q) = %v, want %v", s, got, ok)
		}
	}
	// The message names the path and the value (both the provider's and the
	// installs' tests match on these words).
	var resp validator.StringResponse
	Duration(0, 0).ValidateString(context.Background(), validator.StringRequest{Path: path.Root("request_timeout"), ConfigValue: types.StringValue("soon")}, &resp)
	if d := resp.Diagnostics; len(d) != 1 || !strings.HasPrefix(d[0].Detail(), `request_timeout: "soon" is not a positive duration: "soon" is not a duration`) {
		t.Errorf("diagnostics %v", d)
	}
	if _, err := ParseDuration("5s", time.Minute, 7*24*time.Hour); err == nil || err.Error() != `"5s" is not between 1m and 168h` {
		t.Errorf("range error %v", err)
	}
}
