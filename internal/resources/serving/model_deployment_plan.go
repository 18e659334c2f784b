package serving

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/modelcache"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/rules"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/sizing"
)

// Plan: the checks without I/O (Validate), then the sizing against the live
// nodes (ModifyPlan), which also computes the probes' numbers.

// downstreamSegments name what a liveness probe must not check.
var downstreamSegments = map[string]bool{"ready": true, "readyz": true, "readiness": true, "deps": true,
	"dependencies": true, "upstream": true, "downstream": true}

// checkLivenessPath refuses a liveness path that may check more than the
// server itself.
func checkLivenessPath(p string) error {
	switch {
	case strings.Contains(p, "://") || strings.HasPrefix(p, "//") || strings.Contains(p, "@"):
		return fmt.Errorf("%q names another host; liveness must check only this server", p)
	case strings.ContainsAny(p, "?#"):
		return fmt.Errorf("%q has a query; a liveness probe takes none, so that it cannot be pointed at a dependency", p)
	}
	for _, seg := range strings.Split(strings.ToLower(p), "/") {
		if downstreamSegments[seg] {
			return fmt.Errorf("%q is a readiness or dependency check (segment %q); a liveness probe that fails with a downstream service "+
				"restarts every replica at once. Use the server's own /health here and put this path in readiness_path", p, seg)
		}
	}
	return nil
}

func validateModelDeployment(m *modelDeploymentModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if m.Template != nil {
		var extra []string
		if m.ModelCache != nil {
			extra = append(extra, modelcache.DefaultVolumeName)
		}
		diags.Append(podtemplate.Validate(m.Template, path.Root("template"), extra...)...)
		diags.Append(validateManagedContainer(m)...)
	}
	if md := m.Model; md != nil {
		p := path.Root("model")
		_, d := validateWeights(p, md.ModelBytes, md.ParamsBillion, md.DType)
		diags.Append(d...)
		_, _, d = validateKV(p, types.Int64Null(), md.KVCacheBytesPerToken, md.ContextLength)
		diags.Append(d...)
		heads, d := validateHeads(p, md.AttentionHeads, md.KVHeads)
		diags.Append(d...)
		if !d.HasError() && object.Known(m.GPUsPerReplica) && !md.AttentionHeads.IsUnknown() && !md.KVHeads.IsUnknown() {
			diags.Append(tensorParallelDiags(path.Root("gpus_per_replica"), m.GPUsPerReplica.ValueInt64(), heads)...)
		}
	}
	if object.Known(m.ReserveFraction) {
		_, d := validateReserve(path.Root("reserve_fraction"), m.ReserveFraction)
		diags.Append(d...)
	}
	if object.Known(m.GPUMemory) {
		_, d := validateGPUMemory(path.Root("gpu_memory"), m.GPUMemory)
		diags.Append(d...)
	}
	// (Defaults are not applied yet when the configuration is validated:
	// null is the default.)
	if object.Known(m.Replicas) && m.Replicas.ValueInt64() == 0 && !m.AllowScaleToZero.IsUnknown() && !m.AllowScaleToZero.ValueBool() {
		diags.AddAttributeError(path.Root("replicas"), "Scale to zero not allowed",
			"replicas = 0 leaves the service without a server: the first request waits for a cold start (the weights loaded again). "+
				"Set allow_scale_to_zero = true to choose that, or keep at least 1 replica.")
	}
	if object.Known(m.LivenessPath) {
		if err := checkLivenessPath(m.LivenessPath.ValueString()); err != nil {
			diags.AddAttributeError(path.Root("liveness_path"), "Liveness probe checks more than the server", err.Error()+".")
		}
	}
	if object.Known(m.LivenessPath) && object.Known(m.ReadinessPath) && strings.ContainsAny(m.ReadinessPath.ValueString(), "#") {
		diags.AddAttributeError(path.Root("readiness_path"), "Invalid readiness path", "a fragment is never sent to the server.")
	}
	if mc := m.ModelCache; mc != nil {
		p := path.Root("model_cache")
		switch mode := mc.Mode.ValueString(); {
		case mc.Mode.IsUnknown():
		case (mode == modelcache.ModePVC || mc.Mode.IsNull()) && mc.ClaimName.IsNull():
			diags.AddAttributeError(p.AtName("claim_name"), "Missing claim", "mode pvc mounts the cache's claim; give claim_name.")
		case mode == modelcache.ModeNodeLocal && mc.HostPath.IsNull():
			diags.AddAttributeError(p.AtName("host_path"), "Missing host path", "mode node_local mounts the node's copy; give host_path.")
		}
		if object.Known(mc.SubPath) && (mc.SubPath.ValueString() == "" || strings.HasPrefix(mc.SubPath.ValueString(), "/") || strings.Contains(mc.SubPath.ValueString(), "..")) {
			diags.AddAttributeError(p.AtName("sub_path"), "Invalid sub path", fmt.Sprintf("%q must be a relative path inside the cache.", mc.SubPath.ValueString()))
		}
	}
	if object.Known(m.Name) && len(m.Name.ValueString()) > 63 {
		diags.AddAttributeError(path.Root("name"), "Name too long", "the Service of the same name must be a DNS label of at most 63 characters.")
	}
	return diags
}

// validateManagedContainer: the managed container exists, and leaves to this
// resource what it sets.
func validateManagedContainer(m *modelDeploymentModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if m.Container.IsUnknown() {
		return diags
	}
	name := m.Container.ValueString()
	if m.Container.IsNull() {
		name = deployDefaultContainer
	}
	idx := -1
	var names []string
	for i, c := range m.Template.Containers {
		if c.Name.IsUnknown() {
			return diags
		}
		names = append(names, c.Name.ValueString())
		if c.Name.ValueString() == name {
			idx = i
		}
	}
	if idx < 0 {
		diags.AddAttributeError(path.Root("template").AtName("containers"), "Managed container missing",
			fmt.Sprintf("no container is named %q (container); the containers are %s. Name the model server's container %q or set container.",
				name, strings.Join(names, ", "), name))
		return diags
	}
	c := m.Template.Containers[idx]
	p := path.Root("template").AtName("containers").AtListIndex(idx)
	for field, set := range map[string]bool{"startup_probe": c.StartupProbe != nil, "liveness_probe": c.LivenessProbe != nil, "readiness_probe": c.ReadinessProbe != nil} {
		if set {
			diags.AddAttributeError(p.AtName(field), "Probe set by the resource",
				fmt.Sprintf("the probes of the managed container %q come from the model's load time, liveness_path and readiness_path; remove %s.", name, field))
		}
	}
	for _, res := range []struct {
		name string
		m    types.Map
	}{{"limits", c.Limits}, {"requests", c.Requests}} {
		if _, ok := res.m.Elements()[capacity.DefaultGPUResource]; ok {
			diags.AddAttributeError(p.AtName(res.name), "GPUs set by the resource",
				fmt.Sprintf("%s of the managed container comes from gpus_per_replica; remove it from %s.", capacity.DefaultGPUResource, res.name))
		}
	}
	return diags
}

// deploySizing is the fit rule's answer for m and its load time; ok is
// false while an input is unknown.
func deploySizing(m *modelDeploymentModel) (fit sizing.FitResult, weights int64, ok bool, diags diag.Diagnostics) {
	md := m.Model
	if md == nil || !object.Known(m.GPUMemory) || !object.Known(m.GPUsPerReplica) || !object.Known(m.ReserveFraction) || !object.Known(m.OverheadBytesPerGPU) {
		return fit, 0, false, diags
	}
	w, d := validateWeights(path.Root("model"), md.ModelBytes, md.ParamsBillion, md.DType)
	diags.Append(d...)
	kv, kvOK, d := validateKV(path.Root("model"), types.Int64Null(), md.KVCacheBytesPerToken, md.ContextLength)
	diags.Append(d...)
	mem, d := validateGPUMemory(path.Root("gpu_memory"), m.GPUMemory)
	diags.Append(d...)
	if diags.HasError() || w == 0 || !kvOK || mem == 0 {
		return fit, 0, false, diags
	}
	fit, err := sizing.Fit(sizing.FitInput{WeightsBytes: w, TensorParallel: m.GPUsPerReplica.ValueInt64(), KVBytesPerRequest: kv,
		GPUMemoryBytes: mem, ReserveFraction: m.ReserveFraction.ValueFloat64(), OverheadBytes: m.OverheadBytesPerGPU.ValueInt64()})
	if err != nil {
		diags.AddAttributeError(path.Root("model"), "Cannot size the model", err.Error()+".")
		return fit, 0, false, diags
	}
	return fit, w, true, diags
}

// loadBytesPerSecond is the configured throughput or the default by cache mode.
func (m *modelDeploymentModel) loadBytesPerSecond() int64 {
	if object.Known(m.LoadBytesPerSecond) {
		return m.LoadBytesPerSecond.ValueInt64()
	}
	if m.ModelCache != nil && m.ModelCache.Mode.ValueString() == modelcache.ModeNodeLocal {
		return modelcache.DefaultNodeLocalReadBytesPerSecond
	}
	return modelcache.DefaultPVCReadBytesPerSecond
}

// deriveDeployment sets the computed attributes from the inputs (no I/O);
// the same function runs at plan and after a read, so they never disagree.
func deriveDeployment(m *modelDeploymentModel) diag.Diagnostics {
	if object.Known(m.Name) && object.Known(m.Namespace) && object.Known(m.ServicePort) {
		m.ServiceName = types.StringValue(m.Name.ValueString())
		m.Endpoint = types.StringValue(fmt.Sprintf("http://%s.%s.svc:%d", m.Name.ValueString(), m.Namespace.ValueString(), m.ServicePort.ValueInt64()))
	}
	fit, w, ok, diags := deploySizing(m)
	if !ok {
		return diags
	}
	m.Fit = types.StringValue(fit.Explain())
	m.MaxConcurrency = types.Int64Value(fit.MaxConcurrency)
	b, err := capacity.StartupProbeBudget(capacity.Startup{ModelBytes: w, BytesPerSecond: float64(m.loadBytesPerSecond()), PeriodSeconds: startupPeriod})
	if err != nil {
		diags.AddAttributeError(path.Root("load_bytes_per_second"), "Cannot size the startup probe", err.Error()+".")
		return diags
	}
	m.EstimatedLoadSeconds = types.Int64Value(int64(math.Ceil(b.LoadSeconds)))
	m.StartupFailureThreshold = types.Int64Value(int64(b.FailureThreshold))
	return diags
}

// planModelDeployment resolves gpu_memory from the live nodes, refuses a
// replica that does not fit (with the numbers) or needs more GPUs than a
// node of its pool has, and warns about scale-to-zero and a short timeout.
func planModelDeployment(ctx context.Context, c *kube.Client, m *modelDeploymentModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if c != nil && m.Template != nil && !m.Template.NodeSelector.IsUnknown() && object.Known(m.GPUsPerReplica) {
		selector := object.Labels(m.Template.NodeSelector)
		nodes, err := rules.NodesMatching(ctx, c, selector)
		if err != nil {
			diags.AddError("Cannot read the cluster's nodes", err.Error())
			return diags
		}
		diags.Append(checkDeploymentNodes(m, nodes, selector)...)
		if diags.HasError() {
			return object.WithPaths(diags)
		}
	}
	if m.GPUMemory.IsUnknown() {
		// Not known from the nodes (no client yet): computed at apply.
		return object.WithPaths(diags)
	}
	fit, _, ok, d := deploySizing(m)
	diags.Append(d...)
	if ok && !fit.Fits {
		diags.AddAttributeError(path.Root("gpus_per_replica"), "Model does not fit",
			fmt.Sprintf("one replica cannot hold one request of %d tokens: %s.", m.Model.ContextLength.ValueInt64(), fit.Err()))
	}
	if diags.HasError() {
		return object.WithPaths(diags)
	}
	diags.Append(deriveDeployment(m)...)
	if object.Known(m.Replicas) && m.Replicas.ValueInt64() == 0 && m.AllowScaleToZero.ValueBool() && object.Known(m.EstimatedLoadSeconds) {
		diags.AddAttributeWarning(path.Root("replicas"), "Scaled to zero",
			fmt.Sprintf("no replica serves until one is started again; each cold start loads the weights, about %d s at %d MB/s, "+
				"and the startup probe allows %d s.", m.EstimatedLoadSeconds.ValueInt64(), m.loadBytesPerSecond()/1e6,
				m.StartupFailureThreshold.ValueInt64()*startupPeriod))
	}
	if object.Known(m.Timeout) && object.Known(m.StartupFailureThreshold) && m.WaitForReady.ValueBool() && !m.Timeouts.IsUnknown() {
		load := time.Duration(m.StartupFailureThreshold.ValueInt64()*startupPeriod) * time.Second
		for _, op := range []string{"create", "update"} {
			d, ds := object.OperationTimeout(ctx, m.Timeouts, op, m.Timeout, deployDefaultWait)
			if ds.HasError() || d >= load {
				continue
			}
			at := path.Root("timeout")
			if object.TimeoutSet(m.Timeouts, op) {
				at = path.Root("timeouts").AtName(op)
			}
			diags.AddAttributeWarning(at, "Timeout shorter than the startup probe",
				fmt.Sprintf("a %s waits %s for readiness, but a replica may take up to %s to load (startup probe); a slow load "+
					"fails the apply though the pod would become ready.", op, d, load))
			break
		}
	}
	return object.WithPaths(diags)
}

// checkDeploymentNodes takes gpu_memory from the nodes' label when unset and
// refuses more GPUs per replica than any matching node has allocatable.
func checkDeploymentNodes(m *modelDeploymentModel, nodes []*corev1.Node, selector map[string]string) diag.Diagnostics {
	var diags diag.Diagnostics
	p := path.Root("gpus_per_replica")
	if len(nodes) == 0 {
		diags.AddAttributeWarning(p, "No node matches template.node_selector",
			fmt.Sprintf("no live node matches %s, so the GPUs per replica cannot be checked and the pods will stay Pending until such nodes join.", object.SelectorString(selector)))
		if m.GPUMemory.IsUnknown() {
			diags.AddAttributeError(path.Root("gpu_memory"), "GPU memory unknown", "no live node matches template.node_selector to read nvidia.com/gpu.memory from; set gpu_memory, e.g. \"80Gi\".")
		}
		return diags
	}
	most, where := int64(0), ""
	var mem int64
	memValue := ""
	for _, n := range nodes {
		q := n.Status.Allocatable[corev1.ResourceName(capacity.DefaultGPUResource)]
		if q.Value() > most || where == "" {
			most, where = q.Value(), n.Name
		}
		if v, ok := n.Labels[sizing.GPUMemoryLabel]; ok && q.Value() > 0 {
			s, err := sizing.GPUMemoryFromLabel(v)
			if err != nil {
				continue
			}
			if b, _ := sizing.ParseGPUMemory(s); memValue == "" || b < mem {
				mem, memValue = b, s
			}
		}
	}
	if g := m.GPUsPerReplica.ValueInt64(); g > most {
		diags.AddAttributeError(p, "More GPUs per replica than a node has",
			fmt.Sprintf("each replica asks for %d GPUs, but the %d nodes matching %s have at most %d allocatable (%s). "+
				"Each replica (a pod) runs on one node: lower its GPUs to at most %d, or serve the model with aiplatform_lws_group across nodes.",
				g, len(nodes), object.SelectorString(selector), most, where, most))
	}
	if m.GPUMemory.IsUnknown() {
		if memValue == "" {
			diags.AddAttributeError(path.Root("gpu_memory"), "GPU memory unknown",
				fmt.Sprintf("none of the %d live nodes matching %s carries the label %s (MiB, set by NVIDIA's GPU feature discovery): set gpu_memory, e.g. \"80Gi\".",
					len(nodes), object.SelectorString(selector), sizing.GPUMemoryLabel))
		} else {
			m.GPUMemory = types.StringValue(memValue)
		}
	}
	return diags
}
