package volcano

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// The queue's acceptance tests install Volcano's CRDs with aiplatform_volcano
// in the same apply, so they live beside it: TestAccVolcanoAndQueue and
// TestAccInstallExamples in internal/resources/installs.

// A live quantity equal to what the user wrote keeps the user's spelling; a
// different one is read as the cluster has it.
func TestQuantityMapKeepsPriorSpelling(t *testing.T) {
	prior := types.MapValueMust(types.StringType, map[string]attr.Value{"cpu": types.StringValue("8"), "memory": types.StringValue("1Gi")})
	got := quantityMap(map[string]any{"cpu": "8000m", "memory": "2Gi"}, prior)
	want := types.MapValueMust(types.StringType, map[string]attr.Value{"cpu": types.StringValue("8"), "memory": types.StringValue("2Gi")})
	if !got.Equal(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// A value that is not a quantity is a diagnostic at its map key.
func TestQuantityValuesNamesTheKey(t *testing.T) {
	req := validator.MapRequest{Path: path.Root("capability"),
		ConfigValue: types.MapValueMust(types.StringType, map[string]attr.Value{"cpu": types.StringValue("8"), "nvidia.com/gpu": types.StringValue("two")})}
	var resp validator.MapResponse
	quantityValues{}.ValidateMap(context.Background(), req, &resp)
	if n := resp.Diagnostics.ErrorsCount(); n != 1 {
		t.Fatalf("%d errors: %v", n, resp.Diagnostics)
	}
	if p := resp.Diagnostics.Errors()[0].(interface{ Path() path.Path }).Path(); !p.Equal(path.Root("capability").AtMapKey("nvidia.com/gpu")) {
		t.Errorf("error at %s", p)
	}
}
