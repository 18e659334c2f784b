package serving

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/sizing"
)

// The inputs of internal/sizing's fit and tensor-parallel rules as
// attributes, checked with their paths: shared by the sizing data source and
// the serving resources (aiplatform_model_deployment; aiplatform_lws_group
// can call the same functions).

// at is name under parent, or a root attribute when parent is empty.
func at(parent path.Path, name string) path.Path {
	if len(parent.Steps()) == 0 {
		return path.Root(name)
	}
	return parent.AtName(name)
}

// validateKV returns one request's KV cache in bytes from
// kv_cache_bytes_per_request, or kv_cache_bytes_per_token × context_length
// (0 when neither is set); ok is false while a value is unknown or invalid.
func validateKV(parent path.Path, perRequest, perToken, contextLength types.Int64) (int64, bool, diag.Diagnostics) {
	var diags diag.Diagnostics
	if anyUnknown(perRequest, perToken, contextLength) {
		return 0, false, diags
	}
	for name, v := range map[string]types.Int64{"kv_cache_bytes_per_request": perRequest, "kv_cache_bytes_per_token": perToken, "context_length": contextLength} {
		if !v.IsNull() && v.ValueInt64() < 1 {
			diags.AddAttributeError(at(parent, name), "Invalid "+name, fmt.Sprintf("must be at least 1, got %d.", v.ValueInt64()))
		}
	}
	if diags.HasError() {
		return 0, false, diags
	}
	switch {
	case !perRequest.IsNull() && !perToken.IsNull():
		diags.AddAttributeError(at(parent, "kv_cache_bytes_per_token"), "Conflicting KV cache size",
			"give either kv_cache_bytes_per_request, or kv_cache_bytes_per_token and context_length, not both.")
	case !perToken.IsNull() && contextLength.IsNull():
		diags.AddAttributeError(at(parent, "context_length"), "Missing context_length",
			"kv_cache_bytes_per_token needs context_length: the KV cache of one request is their product.")
	case !perRequest.IsNull():
		return perRequest.ValueInt64(), true, diags
	case !perToken.IsNull():
		kv := perToken.ValueInt64() * contextLength.ValueInt64()
		if kv/contextLength.ValueInt64() != perToken.ValueInt64() || kv > 1<<50 {
			diags.AddAttributeError(at(parent, "context_length"), "KV cache too large",
				fmt.Sprintf("%d bytes per token × %d tokens is more than any GPU set holds.", perToken.ValueInt64(), contextLength.ValueInt64()))
			return 0, false, diags
		}
		return kv, true, diags
	default:
		return 0, true, diags
	}
	return 0, false, diags
}

// validateHeads checks attention_heads and kv_heads (each optional, ≥ 1).
func validateHeads(parent path.Path, attention, kv types.Int64) (sizing.Heads, diag.Diagnostics) {
	var diags diag.Diagnostics
	var h sizing.Heads
	if object.Known(attention) {
		if h.Attention = attention.ValueInt64(); h.Attention < 1 {
			diags.AddAttributeError(at(parent, "attention_heads"), "Invalid attention_heads", fmt.Sprintf("must be at least 1, got %d.", h.Attention))
		}
	}
	if object.Known(kv) {
		if h.KV = kv.ValueInt64(); h.KV < 1 {
			diags.AddAttributeError(at(parent, "kv_heads"), "Invalid kv_heads", fmt.Sprintf("must be at least 1, got %d.", h.KV))
		} else if h.Attention > 0 && h.Attention%h.KV != 0 {
			diags.AddAttributeError(at(parent, "kv_heads"), "Invalid kv_heads",
				fmt.Sprintf("%d KV heads do not divide the %d attention heads (each KV head serves an equal group of query heads).", h.KV, h.Attention))
		}
	}
	return h, diags
}

// tensorParallelDiags applies internal/sizing's tensor-parallel rule to a
// configured TP at p: an error when the known heads refuse it, a warning when
// the attention heads are unknown and it is not a power of two (the plan
// cannot check it, and vLLM refuses it for almost every model).
func tensorParallelDiags(p path.Path, tp int64, heads sizing.Heads) diag.Diagnostics {
	var diags diag.Diagnostics
	note, err := sizing.CheckTensorParallel(tp, heads)
	switch {
	case err != nil:
		diags.AddAttributeError(p, "Invalid tensor parallelism", err.Error()+".")
	case note != "":
		diags.AddAttributeWarning(p, "Tensor parallelism not checked", note+".")
	}
	return diags
}

// validateOverhead checks overhead_bytes_per_gpu; null is the default.
func validateOverhead(p path.Path, v types.Int64) (int64, diag.Diagnostics) {
	var diags diag.Diagnostics
	if !object.Known(v) {
		return sizing.DefaultOverheadBytes, diags
	}
	if v.ValueInt64() < 0 {
		diags.AddAttributeError(p, "Invalid overhead_bytes_per_gpu", fmt.Sprintf("must not be negative, got %d.", v.ValueInt64()))
	}
	return v.ValueInt64(), diags
}
