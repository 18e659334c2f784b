package serving

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
)

// The LLMInferenceServiceConfig both ways. spec.template is a whole pod
// spec, with no metadata of its own (the pods' labels and annotations are
// spec.labels and spec.annotations, which KServe puts on the workload): the
// template's metadata goes there. The sizing inputs go in the same
// annotation as the serving runtime's.

func (m *presetModel) runtime() *servingRuntimeModel {
	return &servingRuntimeModel{Model: m.Sizing, GPUMemory: m.GPUMemory, ReserveFraction: m.ReserveFraction,
		OverheadBytesPerGPU: m.OverheadBytesPerGPU, LoadBytesPerSecond: m.LoadBytesPerSecond}
}

func presetFields(m *presetModel) map[string]any {
	if m.StartupFailureThreshold.IsUnknown() && m.Template != nil || m.GPUsPerPod.IsUnknown() {
		derivePreset(m) // a plan made before the cluster was known
	}
	spec := map[string]any{}
	if md := m.Model; md != nil {
		out := map[string]any{}
		object.Put(out, "uri", md.URI.ValueString())
		object.Put(out, "name", md.Name.ValueString())
		spec["model"] = out
	}
	if p := m.Parallelism; p != nil {
		out := map[string]any{}
		for k, v := range map[string]types.Int64{"tensor": p.Tensor, "pipeline": p.Pipeline, "data": p.Data, "dataLocal": p.DataLocal} {
			if object.Known(v) {
				out[k] = v.ValueInt64()
			}
		}
		if object.Known(p.Expert) {
			out["expert"] = p.Expert.ValueBool()
		}
		spec["parallelism"] = out
	}
	if object.Known(m.Replicas) {
		spec["replicas"] = m.Replicas.ValueInt64()
	}
	if m.Template != nil {
		tmpl := m.Template.Object()
		pod := sub(tmpl, "spec")
		d := m.server(m.tensor() * m.dataLocal())
		d.StartupFailureThreshold = m.StartupFailureThreshold
		decorateServer(pod, d)
		spec["template"] = pod
		object.Put(spec, "labels", object.Fields(tmpl, "metadata", "labels"))
		object.Put(spec, "annotations", object.Fields(tmpl, "metadata", "annotations"))
	}
	if r := m.Router; r != nil {
		out := map[string]any{}
		if r.Route.ValueBool() {
			out["route"] = map[string]any{}
		}
		if len(r.RouteRefs) > 0 {
			refs := make([]any, len(r.RouteRefs))
			for i, n := range r.RouteRefs {
				refs[i] = map[string]any{"name": n.ValueString()}
			}
			out["route"] = map[string]any{"http": map[string]any{"refs": refs}}
		}
		if r.Gateway.ValueBool() {
			out["gateway"] = map[string]any{}
		}
		if len(r.GatewayRefs) > 0 {
			refs := make([]any, len(r.GatewayRefs))
			for i, g := range r.GatewayRefs {
				ref := map[string]any{"name": g.Name.ValueString()}
				object.Put(ref, "namespace", g.Namespace.ValueString())
				refs[i] = ref
			}
			out["gateway"] = map[string]any{"refs": refs}
		}
		if r.Scheduler.ValueBool() {
			s := map[string]any{}
			if object.Known(r.SchedulerReplicas) {
				s["replicas"] = r.SchedulerReplicas.ValueInt64()
			}
			out["scheduler"] = s
		}
		spec["router"] = out
	}
	return map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{runtimeSizingAnnotation: m.runtime().record()}},
		"spec":     spec,
	}
}

func readPreset(live map[string]any, m *presetModel) {
	r := m.runtime()
	r.readRecord(fmt.Sprint(object.Field(live, "metadata", "annotations", runtimeSizingAnnotation)))
	r.sizingDefaults()
	m.Sizing, m.GPUMemory, m.ReserveFraction, m.OverheadBytesPerGPU, m.LoadBytesPerSecond = r.Model, r.GPUMemory, r.ReserveFraction, r.OverheadBytesPerGPU, r.LoadBytesPerSecond
	spec := object.Fields(live, "spec")
	m.Model = nil
	if md := object.Fields(spec, "model"); md != nil {
		m.Model = &presetLLM{URI: object.String(md["uri"], types.StringNull()), Name: object.String(md["name"], types.StringNull())}
	}
	m.Parallelism = nil
	if p := object.Fields(spec, "parallelism"); p != nil {
		pp := &presetParallelism{Tensor: types.Int64Null(), Pipeline: types.Int64Null(), Data: types.Int64Null(), DataLocal: types.Int64Null(), Expert: types.BoolNull()}
		for k, v := range map[string]*types.Int64{"tensor": &pp.Tensor, "pipeline": &pp.Pipeline, "data": &pp.Data, "dataLocal": &pp.DataLocal} {
			if x, ok := p[k]; ok {
				*v = object.Int64(x)
			}
		}
		if x, ok := p["expert"].(bool); ok {
			pp.Expert = types.BoolValue(x)
		}
		m.Parallelism = pp
	}
	m.Replicas = types.Int64Null()
	if x, ok := spec["replicas"]; ok {
		m.Replicas = object.Int64(x)
	}
	m.Router = readPresetRouter(object.Fields(spec, "router"), m.Router)

	if !object.Known(m.Container) {
		m.Container = types.StringValue(presetContainer)
	}
	if m.Port.IsNull() || m.Port.IsUnknown() {
		m.Port = types.Int64Value(presetPort)
	}
	pod, _ := copyJSON(spec["template"]).(map[string]any)
	if pod == nil {
		// No pod: the paths keep their configured (or default) values,
		// which apply to no container.
		m.Template, m.ModelCache, m.StartupFailureThreshold = nil, nil, types.Int64Null()
		if !object.Known(m.LivenessPath) {
			m.LivenessPath = types.StringValue("/health")
		}
		if !object.Known(m.ReadinessPath) {
			m.ReadinessPath = types.StringValue("/v1/models")
		}
		derivePreset(m)
		return
	}
	tmpl := map[string]any{"spec": pod}
	meta := map[string]any{}
	object.Put(meta, "labels", copyJSON(spec["labels"]))
	object.Put(meta, "annotations", copyJSON(spec["annotations"]))
	if len(meta) > 0 {
		tmpl["metadata"] = meta
	}
	d := m.server(m.tensor() * m.dataLocal())
	d.LivenessPath, d.ReadinessPath, d.StartupFailureThreshold = types.StringNull(), types.StringNull(), types.Int64Null()
	prior := m.ModelCache
	d.ModelCache = nil
	for _, c := range object.Items(pod, "containers") {
		if c["name"] == m.Container.ValueString() {
			readManagedContainer(c, pod, d, prior)
		}
	}
	m.LivenessPath, m.ReadinessPath, m.ModelCache = d.LivenessPath, d.ReadinessPath, d.ModelCache
	if object.Known(d.Port) {
		m.Port = d.Port
	}
	m.Template = podtemplate.Read(tmpl, m.Template)
	threshold := d.StartupFailureThreshold
	derivePreset(m)
	m.StartupFailureThreshold = threshold // as live: a changed probe plans its repair
}

// readPresetRouter reads spec.router; an absent piece the prior state
// said false stays false.
func readPresetRouter(r map[string]any, prior *presetRouter) *presetRouter {
	if r == nil {
		return nil
	}
	out := &presetRouter{Route: types.BoolNull(), Gateway: types.BoolNull(), Scheduler: types.BoolNull(), SchedulerReplicas: types.Int64Null()}
	if prior != nil {
		for _, b := range []struct{ to, from *types.Bool }{{&out.Route, &prior.Route}, {&out.Gateway, &prior.Gateway}, {&out.Scheduler, &prior.Scheduler}} {
			if object.Known(*b.from) && !b.from.ValueBool() {
				*b.to = *b.from
			}
		}
	}
	if route, ok := r["route"].(map[string]any); ok {
		refs := object.Items(route, "http", "refs")
		for _, ref := range refs {
			out.RouteRefs = append(out.RouteRefs, object.String(ref["name"], types.StringNull()))
		}
		if len(refs) == 0 {
			out.Route = types.BoolValue(true)
		}
	}
	if gw, ok := r["gateway"].(map[string]any); ok {
		refs := object.Items(gw, "refs")
		for _, ref := range refs {
			out.GatewayRefs = append(out.GatewayRefs, presetRef{Name: object.String(ref["name"], types.StringNull()),
				Namespace: object.String(ref["namespace"], types.StringNull())})
		}
		if len(refs) == 0 {
			out.Gateway = types.BoolValue(true)
		}
	}
	if s, ok := r["scheduler"].(map[string]any); ok {
		out.Scheduler = types.BoolValue(true)
		if x, ok := s["replicas"]; ok {
			out.SchedulerReplicas = object.Int64(x)
		}
	}
	return out
}
