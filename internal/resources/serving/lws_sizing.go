package serving

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/modelcache"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/sizing"
)

// A group's serving block against internal/sizing's rules, the same ones
// data.aiplatform_inference_sizing and aiplatform_model_deployment use:
// the fit rule (weights ÷ TP + one request's KV cache ÷ TP + overhead ≤
// usable memory per GPU, max_concurrency from its answer), the
// tensor-parallel rule (TP divides the heads, when they are given), the
// liveness rule (the server's own health path, never a downstream one) and
// scale to zero as an explicit choice.

// servingJSON is the serving block as recorded on the object.
type servingJSON struct {
	ModelBytes             *int64   `json:"modelBytes,omitempty"`
	ParamsBillion          *float64 `json:"paramsBillion,omitempty"`
	DType                  *string  `json:"dtype,omitempty"`
	KVCacheBytesPerRequest *int64   `json:"kvCacheBytesPerRequest,omitempty"`
	KVCacheBytesPerToken   *int64   `json:"kvCacheBytesPerToken,omitempty"`
	ContextLength          *int64   `json:"contextLength,omitempty"`
	AttentionHeads         *int64   `json:"attentionHeads,omitempty"`
	KVHeads                *int64   `json:"kvHeads,omitempty"`
	OverheadBytesPerGPU    *int64   `json:"overheadBytesPerGPU,omitempty"`
	GPUMemory              *string  `json:"gpuMemory,omitempty"`
	ReserveFraction        *float64 `json:"reserveFraction,omitempty"`
	TensorParallel         *int64   `json:"tensorParallel,omitempty"`
	Port                   *int64   `json:"port,omitempty"`
	HealthPath             *string  `json:"healthPath,omitempty"`
	ReadinessPath          *string  `json:"readinessPath,omitempty"`
}

func servingRecord(s *servingModel) string {
	rec := servingJSON{
		ModelBytes: s.ModelBytes.ValueInt64Pointer(), ParamsBillion: s.ParamsBillion.ValueFloat64Pointer(), DType: s.DType.ValueStringPointer(),
		KVCacheBytesPerRequest: s.KVCacheBytesPerRequest.ValueInt64Pointer(), KVCacheBytesPerToken: s.KVCacheBytesPerToken.ValueInt64Pointer(),
		ContextLength: s.ContextLength.ValueInt64Pointer(), AttentionHeads: s.AttentionHeads.ValueInt64Pointer(), KVHeads: s.KVHeads.ValueInt64Pointer(),
		OverheadBytesPerGPU: s.OverheadBytesPerGPU.ValueInt64Pointer(), GPUMemory: s.GPUMemory.ValueStringPointer(),
		ReserveFraction: s.ReserveFraction.ValueFloat64Pointer(), TensorParallel: s.TensorParallel.ValueInt64Pointer(),
		Port: s.Port.ValueInt64Pointer(), HealthPath: s.HealthPath.ValueStringPointer(), ReadinessPath: s.ReadinessPath.ValueStringPointer(),
	}
	b, _ := json.Marshal(rec)
	return string(b)
}

func servingFromRecord(s string) *servingModel {
	if s == "" {
		return nil
	}
	var rec servingJSON
	if json.Unmarshal([]byte(s), &rec) != nil {
		return nil // not ours: shows as a diff, rewritten by the next apply
	}
	// A record written before the liveness and readiness probes existed has
	// no readinessPath: read as null, it differs from the configuration's
	// default, so the next plan updates the group and adds the probes.
	return &servingModel{
		ModelBytes: types.Int64PointerValue(rec.ModelBytes), ParamsBillion: types.Float64PointerValue(rec.ParamsBillion), DType: types.StringPointerValue(rec.DType),
		KVCacheBytesPerRequest: types.Int64PointerValue(rec.KVCacheBytesPerRequest), KVCacheBytesPerToken: types.Int64PointerValue(rec.KVCacheBytesPerToken),
		ContextLength: types.Int64PointerValue(rec.ContextLength), AttentionHeads: types.Int64PointerValue(rec.AttentionHeads), KVHeads: types.Int64PointerValue(rec.KVHeads),
		OverheadBytesPerGPU: types.Int64PointerValue(rec.OverheadBytesPerGPU), GPUMemory: types.StringPointerValue(rec.GPUMemory),
		ReserveFraction: types.Float64PointerValue(rec.ReserveFraction), TensorParallel: types.Int64PointerValue(rec.TensorParallel),
		Port: types.Int64PointerValue(rec.Port), HealthPath: types.StringPointerValue(rec.HealthPath), ReadinessPath: types.StringPointerValue(rec.ReadinessPath),
	}
}

// servingPath is the path of an attribute of the serving block.
func servingPath(name string) path.Path { return path.Root("serving").AtName(name) }

// tensorParallelPath is where a diagnostic about the TP goes: the
// attribute when set, else the serving block (the TP is the group's GPUs).
func (m *lwsGroupModel) tensorParallelPath() path.Path {
	if m.Serving.TensorParallel.IsNull() {
		return path.Root("serving")
	}
	return servingPath("tensor_parallel")
}

// sizingOf returns the serving block's weights, GPU memory, reserve and
// tensor parallel degree; ok is false while any is unknown or invalid (the
// diagnostics say which are invalid).
func sizingOf(m *lwsGroupModel) (weights, mem int64, reserve float64, tp int64, ok bool, diags diag.Diagnostics) {
	s := m.Serving
	weights, d := validateWeights(path.Root("serving"), s.ModelBytes, s.ParamsBillion, s.DType)
	diags.Append(d...)
	reserve, d = validateReserve(servingPath("reserve_fraction"), s.ReserveFraction)
	diags.Append(d...)
	mem, d = validateGPUMemory(servingPath("gpu_memory"), s.GPUMemory)
	diags.Append(d...)
	group, groupKnown := m.groupGPUs()
	if groupKnown && group == 0 {
		diags.AddAttributeError(path.Root("worker").AtName("gpus"), "Serving without GPUs",
			"serving sizes a model on GPUs, but the group requests none: set worker.gpus (and leader.gpus), or nvidia.com/gpu in the limits of a container of worker.containers (and leader.containers).")
	}
	switch {
	case object.Known(s.TensorParallel):
		tp = s.TensorParallel.ValueInt64()
		if groupKnown && group > 0 && tp > group {
			size := int64(1)
			if object.Known(m.Size) {
				size = m.Size.ValueInt64()
			}
			diags.AddAttributeError(servingPath("tensor_parallel"), "More tensor parallelism than GPUs",
				fmt.Sprintf("tensor_parallel %d exceeds the %d GPUs of a group (size %d: leader %d GPUs + %d workers × %d GPUs).",
					tp, group, size, m.leaderTemplate().gpus(), size-1, m.Worker.gpus()))
		}
	case s.TensorParallel.IsNull() && groupKnown:
		tp = group
	}
	ok = !diags.HasError() && weights > 0 && mem > 0 && tp > 0 && !s.ReserveFraction.IsUnknown()
	return weights, mem, reserve, tp, ok, diags
}

// groupFit is the fit rule's answer for one group, after the
// tensor-parallel rule; ok is false while an input is unknown or invalid.
func groupFit(m *lwsGroupModel) (fit sizing.FitResult, kv int64, ok bool, diags diag.Diagnostics) {
	s := m.Serving
	weights, mem, reserve, tp, ok, diags := sizingOf(m)
	kv, kvOK, d := validateKV(path.Root("serving"), s.KVCacheBytesPerRequest, s.KVCacheBytesPerToken, s.ContextLength)
	diags.Append(d...)
	heads, d := validateHeads(path.Root("serving"), s.AttentionHeads, s.KVHeads)
	diags.Append(d...)
	overhead, d := validateOverhead(servingPath("overhead_bytes_per_gpu"), s.OverheadBytesPerGPU)
	diags.Append(d...)
	if tp > 0 && !d.HasError() && !s.AttentionHeads.IsUnknown() && !s.KVHeads.IsUnknown() && !diags.HasError() {
		diags.Append(tensorParallelDiags(m.tensorParallelPath(), tp, heads)...)
	}
	if !ok || !kvOK || diags.HasError() || s.OverheadBytesPerGPU.IsUnknown() {
		return fit, 0, false, diags
	}
	fit, err := sizing.Fit(sizing.FitInput{WeightsBytes: weights, TensorParallel: tp, KVBytesPerRequest: kv,
		GPUMemoryBytes: mem, ReserveFraction: reserve, OverheadBytes: overhead})
	if err != nil {
		diags.AddAttributeError(path.Root("serving"), "Cannot size the model", err.Error()+".")
		return fit, 0, false, diags
	}
	return fit, kv, true, diags
}

// checkFit refuses a group that cannot hold its weights, one request at the
// configured context length and the overhead, with the numbers.
func checkFit(m *lwsGroupModel) diag.Diagnostics {
	fit, kv, ok, diags := groupFit(m)
	if !ok || fit.Fits {
		return diags
	}
	what := "one replica cannot hold its weights and the per-GPU overhead"
	if kv > 0 {
		what = "one replica cannot hold its weights, the KV cache of one request"
		if s := m.Serving; object.Known(s.ContextLength) && s.KVCacheBytesPerRequest.IsNull() {
			what += fmt.Sprintf(" of %d tokens", s.ContextLength.ValueInt64())
		}
		what += " and the per-GPU overhead"
		if fit.MaxConcurrency == 0 && fit.WeightsPerGPU+fit.OverheadBytes <= fit.UsableBytesPerGPU {
			what += " (the weights fit, but its maximum concurrency would be 0)"
		}
	}
	diags.AddAttributeError(m.tensorParallelPath(), "Model does not fit the GPUs", fmt.Sprintf("%s: %s.", what, fit.Err()))
	return diags
}

// checkScaleToZero refuses replicas = 0 without allow_scale_to_zero (null
// is the default, false, when the configuration is validated).
func checkScaleToZero(m *lwsGroupModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if object.Known(m.Replicas) && m.Replicas.ValueInt64() == 0 && !m.AllowScaleToZero.IsUnknown() && !m.AllowScaleToZero.ValueBool() {
		diags.AddAttributeError(path.Root("replicas"), "Scale to zero not allowed",
			"replicas = 0 leaves the service without a server: the first request waits for a cold start (every group loads the weights again). "+
				"Set allow_scale_to_zero = true to choose that, or keep at least 1 replica.")
	}
	return diags
}

// warnScaleToZero warns, at plan, that a group scaled to zero by choice
// starts cold, with the load time the startup probe is sized from.
func warnScaleToZero(m *lwsGroupModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if !object.Known(m.Replicas) || m.Replicas.ValueInt64() != 0 || !m.AllowScaleToZero.ValueBool() {
		return diags
	}
	msg := "no group serves until replicas is raised again; each cold start schedules the group and loads the weights"
	if m.Serving != nil {
		if _, b, ok := startupProbe(m); ok {
			rate := int64(modelcache.DefaultPVCReadBytesPerSecond)
			if m.ModelCache != nil && m.ModelCache.Mode.ValueString() == modelcache.ModeNodeLocal {
				rate = modelcache.DefaultNodeLocalReadBytesPerSecond
			}
			msg += fmt.Sprintf(", about %d s at %d MB/s from the model cache, and the startup probe allows %d s",
				int64(math.Ceil(b.LoadSeconds)), rate/1e6, int64(b.FailureThreshold)*int64(b.PeriodSeconds))
		}
	}
	diags.AddAttributeWarning(path.Root("replicas"), "Scaled to zero", msg+".")
	return diags
}

// checkProbePaths applies the liveness rule to health_path (the startup
// and liveness probes poll it) and keeps readiness_path apart from it.
func checkProbePaths(s *servingModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if object.Known(s.HealthPath) {
		if err := checkLivenessPath(s.HealthPath.ValueString()); err != nil {
			diags.AddAttributeError(servingPath("health_path"), "Liveness probe checks more than the server", err.Error()+".")
		}
	}
	if object.Known(s.ReadinessPath) && len(s.ReadinessPath.ValueString()) > 0 && s.ReadinessPath.ValueString()[0] != '/' {
		diags.AddAttributeError(servingPath("readiness_path"), "Invalid readiness_path", "must start with /.")
	}
	return diags
}

// derive sets the computed attributes from the model (no I/O).
func derive(m *lwsGroupModel) {
	m.GPUsTotal, m.MaxConcurrency = types.Int64Unknown(), types.Int64Null()
	if g, ok := m.groupGPUs(); ok && object.Known(m.Replicas) {
		m.GPUsTotal = types.Int64Value(m.Replicas.ValueInt64() * g)
	}
	s := m.Serving
	if s == nil || (s.KVCacheBytesPerRequest.IsNull() && s.KVCacheBytesPerToken.IsNull()) {
		return
	}
	m.MaxConcurrency = types.Int64Unknown()
	fit, kv, ok, _ := groupFit(m)
	if !ok || kv == 0 || !object.Known(m.Replicas) {
		return
	}
	m.MaxConcurrency = types.Int64Value(m.Replicas.ValueInt64() * fit.MaxConcurrency)
}
