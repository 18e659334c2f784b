package serving

import (
	"context"
	"fmt"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/rules"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/sizing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// Plan: the model server's checks are the model deployment's, with the
// preset's two GPU counts (the pod's, the shards'), then the router's.

var modelURI = regexp.MustCompile(`^[a-z][a-z0-9+.-]*://.+`)

func validatePreset(m *presetModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if m.Template != nil {
		d := m.server(m.tensor() * m.dataLocal())
		d.Name = types.StringNull()
		// The pod's GPUs are tensor × data_local; the tensor parallelism is
		// parallelism.tensor alone, checked against the heads below.
		d.GPUsPerReplica = types.Int64Unknown()
		if d.Container.IsNull() {
			d.Container = types.StringValue(presetContainer) // the default, not applied yet
		}
		diags.Append(validateModelDeployment(d)...)
	} else {
		for _, attr := range []struct {
			name string
			set  bool
		}{{"model_cache", m.ModelCache != nil}, {"liveness_path", !m.LivenessPath.IsNull()}, {"readiness_path", !m.ReadinessPath.IsNull()}} {
			if attr.set {
				diags.AddAttributeError(path.Root(attr.name), "No pod to apply it to",
					attr.name+" sets the vLLM container of template, which this preset does not have; give template, or leave it to the base presets.")
			}
		}
		if md := m.Sizing; md != nil {
			_, d := validateWeights(path.Root("sizing"), md.ModelBytes, md.ParamsBillion, md.DType)
			diags.Append(d...)
			_, _, d = validateKV(path.Root("sizing"), types.Int64Null(), md.KVCacheBytesPerToken, md.ContextLength)
			diags.Append(d...)
		}
	}
	// The model deployment's checks name the "model" attribute and check
	// GPUs per replica against the heads: the preset's are "sizing" and
	// parallelism.tensor.
	diags = renamePaths(diags)
	if md := m.Sizing; md != nil && m.parallelismKnown() && !md.AttentionHeads.IsUnknown() && !md.KVHeads.IsUnknown() {
		heads, d := validateHeads(path.Root("sizing"), md.AttentionHeads, md.KVHeads)
		if !d.HasError() {
			diags.Append(tensorParallelDiags(path.Root("parallelism").AtName("tensor"), m.tensor(), heads)...)
		}
	}
	if p := m.Parallelism; p != nil && m.parallelismKnown() {
		if g := m.tensor() * m.dataLocal(); g > sizing.MaxGPUs {
			diags.AddAttributeError(path.Root("parallelism").AtName("data_local"), "Too many GPUs per pod",
				fmt.Sprintf("tensor %d × data_local %d = %d GPUs in one pod, more than any node has (at most %d).", m.tensor(), m.dataLocal(), g, sizing.MaxGPUs))
		}
		if object.Known(p.Data) && object.Known(p.DataLocal) && p.Data.ValueInt64()%p.DataLocal.ValueInt64() != 0 {
			diags.AddAttributeError(path.Root("parallelism").AtName("data_local"), "Data-local ranks do not divide data",
				fmt.Sprintf("data %d is spread over pods of data_local %d ranks each; %d ÷ %d leaves a partial pod.",
					p.Data.ValueInt64(), p.DataLocal.ValueInt64(), p.Data.ValueInt64(), p.DataLocal.ValueInt64()))
		}
	}
	if r := m.Router; r != nil {
		rp := path.Root("router")
		if r.Route.ValueBool() && len(r.RouteRefs) > 0 {
			diags.AddAttributeError(rp.AtName("route_refs"), "Managed and referenced route",
				"route = true has KServe create the HTTPRoute; route_refs names existing ones instead. Choose one.")
		}
		if r.Gateway.ValueBool() && len(r.GatewayRefs) > 0 {
			diags.AddAttributeError(rp.AtName("gateway_refs"), "Managed and referenced gateway",
				"gateway = true attaches to KServe's configured Gateway; gateway_refs names others instead. Choose one.")
		}
		if object.Known(r.SchedulerReplicas) && !r.Scheduler.IsUnknown() && !r.Scheduler.ValueBool() {
			diags.AddAttributeError(rp.AtName("scheduler_replicas"), "Replicas of no scheduler",
				"scheduler_replicas sizes the endpoint picker KServe runs with scheduler = true; set scheduler = true or remove it.")
		}
		if r.Scheduler.ValueBool() && !r.Route.IsUnknown() && !r.Route.ValueBool() && len(r.RouteRefs) == 0 && !r.Gateway.ValueBool() && len(r.GatewayRefs) == 0 {
			diags.AddAttributeWarning(rp.AtName("scheduler"), "Endpoint picker without a route",
				"the endpoint picker routes requests that come through a Gateway's HTTPRoute; without route or a gateway here, a base preset or the service must give them.")
		}
	}
	return diags
}

// renamePaths points the model deployment's diagnostics at the preset's
// attributes: model → sizing, gpus_per_replica → parallelism.tensor.
func renamePaths(in diag.Diagnostics) diag.Diagnostics {
	out := make(diag.Diagnostics, 0, len(in))
	for _, d := range in {
		dp, ok := d.(diag.DiagnosticWithPath)
		if !ok || len(dp.Path().Steps()) == 0 {
			out = append(out, d)
			continue
		}
		steps := dp.Path().Steps()
		var p path.Path
		switch first := steps[0].String(); first {
		case "model":
			p = path.Root("sizing")
		case "gpus_per_replica":
			p = path.Root("parallelism").AtName("tensor")
		default:
			out = append(out, d)
			continue
		}
		for _, s := range steps[1:] {
			if n, ok := s.(path.PathStepAttributeName); ok {
				p = p.AtName(string(n))
			}
		}
		if d.Severity() == diag.SeverityError {
			out.AddAttributeError(p, d.Summary(), d.Detail())
		} else {
			out.AddAttributeWarning(p, d.Summary(), d.Detail())
		}
	}
	return out
}

// planPreset: the pod's GPUs against the nodes and GPU memory from them
// (as the model deployment's plan), then the fit over tensor × pipeline
// shards and the probes.
func planPreset(ctx context.Context, c *kube.Client, m *presetModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if !m.parallelismKnown() {
		m.GPUsPerPod = types.Int64Unknown()
		return diags
	}
	m.GPUsPerPod = types.Int64Value(m.tensor() * m.dataLocal())
	if m.Sizing == nil && m.GPUMemory.IsUnknown() {
		m.GPUMemory = types.StringNull()
	}
	if c != nil && (m.Template == nil || !m.Template.NodeSelector.IsUnknown()) && (m.Sizing != nil || m.Template != nil) {
		var selector map[string]string
		if m.Template != nil {
			selector = object.Labels(m.Template.NodeSelector)
		}
		nodes, err := rules.NodesMatching(ctx, c, selector)
		if err != nil {
			diags.AddError("Cannot read the cluster's nodes", err.Error())
			return diags
		}
		pod := m.server(m.tensor() * m.dataLocal())
		nd := checkDeploymentNodes(pod, nodes, selector)
		for _, d := range renamePaths(nd) {
			if d.Severity() == diag.SeverityError && m.Template == nil && m.Sizing == nil {
				continue
			}
			diags.Append(d)
		}
		m.GPUMemory = pod.GPUMemory
		if diags.HasError() {
			return object.WithPaths(diags)
		}
	}
	if m.GPUMemory.IsUnknown() {
		return object.WithPaths(diags) // no client yet: computed at apply
	}
	shards := m.server(m.tensor() * m.pipeline())
	fit, _, ok, d := deploySizing(shards)
	diags.Append(renamePaths(d)...)
	if ok && !fit.Fits {
		diags.AddAttributeError(path.Root("parallelism").AtName("tensor"), "Model does not fit",
			fmt.Sprintf("one model copy over tensor %d × pipeline %d = %d GPUs cannot hold one request of %d tokens: %s.",
				m.tensor(), m.pipeline(), m.tensor()*m.pipeline(), m.Sizing.ContextLength.ValueInt64(), fit.Err()))
	}
	if diags.HasError() {
		return object.WithPaths(diags)
	}
	derivePreset(m)
	return object.WithPaths(diags)
}

// derivePreset sets the computed sizing and probe values (no I/O).
func derivePreset(m *presetModel) {
	m.GPUsPerPod = types.Int64Value(m.tensor() * m.dataLocal())
	d := m.server(m.tensor() * m.pipeline())
	deriveDeployment(d)
	m.Fit, m.MaxConcurrency, m.EstimatedLoadSeconds, m.StartupFailureThreshold = d.Fit, d.MaxConcurrency, d.EstimatedLoadSeconds, d.StartupFailureThreshold
	if m.Sizing == nil {
		m.Fit, m.MaxConcurrency, m.EstimatedLoadSeconds = types.StringNull(), types.Int64Null(), types.Int64Null()
		m.StartupFailureThreshold = types.Int64Value(noModelThreshold())
	}
	if m.Template == nil {
		m.StartupFailureThreshold = types.Int64Null()
	}
}
