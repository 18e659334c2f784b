package serving

import (
	"encoding/json"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/sizing"
)

// The ServingRuntime both ways. KServe's ServingRuntimePodSpec is a pod
// spec inlined into the runtime's spec, with the pod's labels and
// annotations beside it: the pod template (with the managed container
// decorated as a model deployment's) is laid out that way on the way out,
// and gathered back into a template before podtemplate.Read on the way in.

// runtimeRecord is the sizing input a ServingRuntime does not carry, kept
// in its runtimeSizingAnnotation.
type runtimeRecord struct {
	Model               *deployRecord `json:"model,omitempty"`
	GPUMemory           string        `json:"gpuMemory,omitempty"`
	ReserveFraction     float64       `json:"reserveFraction"`
	OverheadBytesPerGPU int64         `json:"overheadBytesPerGPU"`
	LoadBytesPerSecond  *int64        `json:"loadBytesPerSecond,omitempty"`
}

func (m *servingRuntimeModel) record() string {
	rec := runtimeRecord{GPUMemory: m.GPUMemory.ValueString(), ReserveFraction: m.ReserveFraction.ValueFloat64(),
		OverheadBytesPerGPU: m.OverheadBytesPerGPU.ValueInt64(), LoadBytesPerSecond: m.LoadBytesPerSecond.ValueInt64Pointer()}
	if md := m.Model; md != nil {
		rec.Model = &deployRecord{ParamsBillion: md.ParamsBillion.ValueFloat64Pointer(), DType: md.DType.ValueStringPointer(),
			ModelBytes: md.ModelBytes.ValueInt64Pointer(), ContextLength: md.ContextLength.ValueInt64(),
			KVCacheBytesPerToken: md.KVCacheBytesPerToken.ValueInt64(), AttentionHeads: md.AttentionHeads.ValueInt64Pointer(),
			KVHeads: md.KVHeads.ValueInt64Pointer()}
	}
	b, _ := json.Marshal(rec)
	return string(b)
}

func (m *servingRuntimeModel) readRecord(s string) {
	var rec runtimeRecord
	if s == "" || json.Unmarshal([]byte(s), &rec) != nil {
		return
	}
	m.Model = nil
	if r := rec.Model; r != nil {
		m.Model = &deployModelSpec{
			ParamsBillion: types.Float64PointerValue(r.ParamsBillion), DType: types.StringPointerValue(r.DType), ModelBytes: types.Int64PointerValue(r.ModelBytes),
			ContextLength: types.Int64Value(r.ContextLength), KVCacheBytesPerToken: types.Int64Value(r.KVCacheBytesPerToken),
			AttentionHeads: types.Int64PointerValue(r.AttentionHeads), KVHeads: types.Int64PointerValue(r.KVHeads),
		}
	}
	m.GPUMemory = types.StringNull()
	if rec.GPUMemory != "" {
		m.GPUMemory = types.StringValue(rec.GPUMemory)
	}
	m.ReserveFraction = types.Float64Value(rec.ReserveFraction)
	m.OverheadBytesPerGPU = types.Int64Value(rec.OverheadBytesPerGPU)
	m.LoadBytesPerSecond = types.Int64PointerValue(rec.LoadBytesPerSecond)
}

// sizingDefaults fills what a runtime or preset without the provider's
// annotation (one published by hand, imported) leaves unset.
func (m *servingRuntimeModel) sizingDefaults() {
	if !object.Known(m.ReserveFraction) {
		m.ReserveFraction = types.Float64Value(sizing.DefaultReserveFraction)
	}
	if !object.Known(m.OverheadBytesPerGPU) {
		m.OverheadBytesPerGPU = types.Int64Value(sizing.DefaultOverheadBytes)
	}
}

func servingRuntimeFields(m *servingRuntimeModel) map[string]any {
	if m.StartupFailureThreshold.IsUnknown() {
		// A plan made before the cluster was known.
		d := m.server()
		deriveDeployment(d)
		m.fromServer(d)
		if m.Model == nil {
			m.StartupFailureThreshold = types.Int64Value(noModelThreshold())
		}
	}
	tmpl := m.Template.Object()
	podSpec := sub(tmpl, "spec")
	decorateServer(podSpec, m.server())
	spec := map[string]any{}
	for k, v := range podSpec {
		spec[k] = v
	}
	object.Put(spec, "labels", object.Fields(tmpl, "metadata", "labels"))
	object.Put(spec, "annotations", object.Fields(tmpl, "metadata", "annotations"))
	formats := make([]any, 0, len(m.ModelFormats))
	for _, f := range m.ModelFormats {
		out := map[string]any{"name": f.Name.ValueString()}
		if object.Known(f.Version) {
			out["version"] = f.Version.ValueString()
		}
		if object.Known(f.AutoSelect) {
			out["autoSelect"] = f.AutoSelect.ValueBool()
		}
		if object.Known(f.Priority) {
			out["priority"] = f.Priority.ValueInt64()
		}
		formats = append(formats, out)
	}
	spec["supportedModelFormats"] = formats
	if len(m.ProtocolVersions) > 0 {
		pv := make([]any, len(m.ProtocolVersions))
		for i, p := range m.ProtocolVersions {
			pv[i] = p.ValueString()
		}
		spec["protocolVersions"] = pv
	}
	spec["multiModel"] = m.MultiModel.ValueBool()
	spec["disabled"] = m.Disabled.ValueBool()
	return map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{runtimeSizingAnnotation: m.record()}},
		"spec":     spec,
	}
}

func readServingRuntime(live map[string]any, m *servingRuntimeModel) {
	m.readRecord(fmt.Sprint(object.Field(live, "metadata", "annotations", runtimeSizingAnnotation)))
	m.sizingDefaults()
	spec := object.Fields(live, "spec")
	var formats []runtimeFormat
	for i, f := range object.Items(spec, "supportedModelFormats") {
		var prior runtimeFormat
		if i < len(m.ModelFormats) {
			prior = m.ModelFormats[i]
		}
		rf := runtimeFormat{Name: object.String(f["name"], types.StringNull()), Version: object.String(f["version"], types.StringNull()),
			AutoSelect: types.BoolNull(), Priority: types.Int64Null()}
		if v, ok := f["autoSelect"].(bool); ok {
			rf.AutoSelect = types.BoolValue(v)
			if !v && prior.AutoSelect.IsNull() {
				rf.AutoSelect = types.BoolNull() // false and unset are the same to KServe
			}
		}
		if _, ok := f["priority"]; ok {
			rf.Priority = object.Int64(f["priority"])
		}
		formats = append(formats, rf)
	}
	m.ModelFormats = formats
	m.ProtocolVersions = nil
	for _, p := range object.List(spec, "protocolVersions") {
		m.ProtocolVersions = append(m.ProtocolVersions, types.StringValue(fmt.Sprint(p)))
	}
	m.MultiModel = types.BoolValue(spec["multiModel"] == true)
	m.Disabled = types.BoolValue(spec["disabled"] == true)

	// The pod template the runtime's spec inlines.
	podSpec := map[string]any{}
	for k, v := range spec {
		if runtimePodFields[k] {
			podSpec[k] = copyJSON(v)
		}
	}
	tmpl := map[string]any{"spec": podSpec}
	meta := map[string]any{}
	object.Put(meta, "labels", copyJSON(spec["labels"]))
	object.Put(meta, "annotations", copyJSON(spec["annotations"]))
	if len(meta) > 0 {
		tmpl["metadata"] = meta
	}
	if !object.Known(m.Container) {
		// An import: the container KServe merges into, else the only one.
		m.Container = types.StringValue(runtimeContainer)
		if cs := object.Items(podSpec, "containers"); len(cs) == 1 {
			m.Container = object.String(cs[0]["name"], types.StringNull())
		}
	}
	d := m.server()
	d.GPUsPerReplica, d.LivenessPath, d.ReadinessPath, d.StartupFailureThreshold = types.Int64Null(), types.StringNull(), types.StringNull(), types.Int64Null()
	prior := m.ModelCache
	d.ModelCache = nil
	for _, c := range object.Items(podSpec, "containers") {
		if c["name"] == m.Container.ValueString() {
			readManagedContainer(c, podSpec, d, prior)
		}
	}
	m.GPUsPerReplica, m.LivenessPath, m.ReadinessPath, m.ModelCache = d.GPUsPerReplica, d.LivenessPath, d.ReadinessPath, d.ModelCache
	m.Port = d.Port
	if m.Port.IsNull() || m.Port.IsUnknown() {
		m.Port = types.Int64Value(runtimePort)
	}
	m.Template = podtemplate.Read(tmpl, m.Template)
	threshold := d.StartupFailureThreshold
	d = m.server()
	deriveDeployment(d)
	m.fromServer(d)
	m.StartupFailureThreshold = threshold // as live: a changed probe plans its repair
	if m.Model == nil {
		m.Fit, m.MaxConcurrency, m.EstimatedLoadSeconds = types.StringNull(), types.Int64Null(), types.Int64Null()
	}
}

// copyJSON deep-copies a value of a live object (nil stays nil).
func copyJSON(v any) any {
	if v == nil {
		return nil
	}
	return runtime.DeepCopyJSONValue(v)
}
