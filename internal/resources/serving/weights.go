package serving

import (
	"fmt"
	"math"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/sizing"
)

// What the sizing data source and a group's serving block share: how the
// weights are described and checked (internal/sizing does the arithmetic).

// anyUnknown is true when a value is not known until apply.
func anyUnknown(vs ...interface{ IsUnknown() bool }) bool {
	for _, v := range vs {
		if v.IsUnknown() {
			return true
		}
	}
	return false
}

// validateWeights checks model_bytes | params_billion + dtype under parent and
// returns the weights in bytes (0 when not known yet or invalid).
func validateWeights(parent path.Path, modelBytes types.Int64, params types.Float64, dtype types.String) (int64, diag.Diagnostics) {
	var diags diag.Diagnostics
	if anyUnknown(modelBytes, params, dtype) {
		return 0, diags
	}
	at := func(name string) path.Path {
		if len(parent.Steps()) == 0 {
			return path.Root(name)
		}
		return parent.AtName(name)
	}
	hasBytes, hasParams, hasDType := !modelBytes.IsNull(), !params.IsNull(), !dtype.IsNull()
	switch {
	case hasBytes && (hasParams || hasDType):
		p := at("params_billion")
		if !hasParams {
			p = at("dtype")
		}
		diags.AddAttributeError(p, "Conflicting weights description",
			"give either model_bytes, or params_billion and dtype, not both.")
		return 0, diags
	case !hasBytes && !hasParams && !hasDType:
		diags.AddAttributeError(at("model_bytes"), "Missing weights description",
			"give model_bytes (the weights' size in bytes), or params_billion and dtype.")
		return 0, diags
	case hasParams && !hasDType:
		diags.AddAttributeError(at("dtype"), "Missing dtype",
			fmt.Sprintf("params_billion needs dtype, one of %s.", strings.Join(sizing.DTypes(), ", ")))
		return 0, diags
	case hasDType && !hasParams:
		diags.AddAttributeError(at("params_billion"), "Missing params_billion",
			"dtype needs params_billion, the number of parameters in billions (e.g. 70).")
		return 0, diags
	case hasBytes:
		if modelBytes.ValueInt64() < 1 {
			diags.AddAttributeError(at("model_bytes"), "Invalid model_bytes", fmt.Sprintf("must be at least 1, got %d.", modelBytes.ValueInt64()))
			return 0, diags
		}
		return modelBytes.ValueInt64(), diags
	}
	pb := params.ValueFloat64()
	if !(pb > 0) || math.IsInf(pb, 0) {
		diags.AddAttributeError(at("params_billion"), "Invalid params_billion", fmt.Sprintf("must be a positive number of billions, got %v.", pb))
		return 0, diags
	}
	w, err := sizing.WeightsBytes(pb, dtype.ValueString())
	if err != nil {
		diags.AddAttributeError(at("dtype"), "Invalid weights", err.Error()+".")
		return 0, diags
	}
	return w, diags
}

// validateReserve checks reserve_fraction ∈ [0, 1); null is the default.
func validateReserve(p path.Path, v types.Float64) (float64, diag.Diagnostics) {
	var diags diag.Diagnostics
	if !object.Known(v) {
		return sizing.DefaultReserveFraction, diags
	}
	r := v.ValueFloat64()
	if !(r >= 0 && r < 1) {
		diags.AddAttributeError(p, "Invalid reserve_fraction",
			fmt.Sprintf("must be at least 0 and less than 1 (the share of each GPU's memory kept for the framework), got %v.", r))
	}
	return r, diags
}

// validateGPUMemory parses gpu_memory; 0 when null, unknown or invalid.
func validateGPUMemory(p path.Path, v types.String) (int64, diag.Diagnostics) {
	var diags diag.Diagnostics
	if !object.Known(v) {
		return 0, diags
	}
	b, err := sizing.ParseGPUMemory(v.ValueString())
	if err != nil {
		diags.AddAttributeError(p, "Invalid gpu_memory",
			fmt.Sprintf("%q: %v (one GPU's memory, e.g. \"80Gi\" = 80 × 2^30 bytes or \"80G\" = 80 × 10^9 bytes).", v.ValueString(), err))
	}
	return b, diags
}
