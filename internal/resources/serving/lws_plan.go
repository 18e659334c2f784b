package serving

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/modelcache"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/rules"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/sizing"
)

// What a group's plan reads from the live nodes: the GPUs' memory when
// serving.gpu_memory is unset, and whether each pod fits a node of its pool.
// Nodes come from the client's one listing per provider run.

// planLWS is the ModifyPlan of aiplatform_lws_group.
func planLWS(ctx context.Context, c *kube.Client, m *lwsGroupModel) diag.Diagnostics {
	return object.WithPaths(planGroup(ctx, c, m))
}

func planGroup(ctx context.Context, c *kube.Client, m *lwsGroupModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if s := m.Serving; s != nil {
		if s.GPUMemory.IsUnknown() && c != nil {
			mem, d := gpuMemoryFromNodes(ctx, c, m)
			diags.Append(d...)
			if d.HasError() {
				return diags
			}
			if mem != "" {
				s.GPUMemory = types.StringValue(mem)
			}
		}
		if s.TensorParallel.IsUnknown() {
			if g, ok := m.groupGPUs(); ok && g > 0 {
				s.TensorParallel = types.Int64Value(g)
			}
		}
		if diags.Append(checkFit(m)...); diags.HasError() {
			return diags
		}
	}
	if c != nil {
		diags.Append(checkPool(ctx, c, m)...)
	}
	derive(m)
	diags.Append(warnScaleToZero(m)...)
	return diags
}

// gpuTemplate is the template whose pods hold the group's GPUs (the
// workers', unless only the leader has GPUs), with its path.
func (m *lwsGroupModel) gpuTemplate() (*podTemplateModel, path.Path) {
	if m.Worker.gpus() == 0 && m.Leader != nil && m.Leader.gpus() > 0 {
		return m.Leader, path.Root("leader")
	}
	return m.Worker, path.Root("worker")
}

// gpuMemoryFromNodes is the smallest nvidia.com/gpu.memory (MiB) of the live
// nodes of the GPU pods' pool, as a quantity; "" while the selector is unknown.
func gpuMemoryFromNodes(ctx context.Context, c *kube.Client, m *lwsGroupModel) (string, diag.Diagnostics) {
	var diags diag.Diagnostics
	t, tp := m.gpuTemplate()
	if t == nil || t.NodeSelector.IsUnknown() {
		return "", diags
	}
	selector := object.Labels(t.NodeSelector)
	nodes, err := rules.NodesMatching(ctx, c, selector)
	if err != nil {
		diags.AddError("Cannot read the cluster's nodes", err.Error())
		return "", diags
	}
	var best int64
	var value string
	for _, n := range nodes {
		v, ok := n.Labels[sizing.GPUMemoryLabel]
		if !ok {
			continue
		}
		q, err := sizing.GPUMemoryFromLabel(v)
		if err != nil {
			diags.AddAttributeError(servingPath("gpu_memory"), "Unreadable GPU memory label", fmt.Sprintf("node %s: %v; set serving.gpu_memory.", n.Name, err))
			return "", diags
		}
		b, _ := sizing.ParseGPUMemory(q)
		if value == "" || b < best {
			best, value = b, q
		}
	}
	if value == "" {
		what := fmt.Sprintf("none of the %d live nodes matching %s.node_selector %s carries", len(nodes), tp, object.SelectorString(selector))
		if len(nodes) == 0 {
			what = fmt.Sprintf("no live node matches %s.node_selector %s, so none carries", tp, object.SelectorString(selector))
		}
		diags.AddAttributeError(servingPath("gpu_memory"), "GPU memory unknown",
			fmt.Sprintf("%s the label %s (set by NVIDIA's GPU feature discovery, in MiB): set serving.gpu_memory, e.g. \"80Gi\".", what, sizing.GPUMemoryLabel))
	}
	return value, diags
}

// checkPool refuses a pod that needs more GPUs than any live node of its
// pool has: the group could never be scheduled. A pool without live nodes
// only warns (nodes may join, e.g. through an autoscaler).
func checkPool(ctx context.Context, c *kube.Client, m *lwsGroupModel) diag.Diagnostics {
	var diags diag.Diagnostics
	check := func(t *podTemplateModel, p path.Path, role string) {
		if t == nil || !t.gpusKnown() || t.gpus() == 0 || t.NodeSelector.IsUnknown() {
			return
		}
		selector := object.Labels(t.NodeSelector)
		nodes, err := rules.NodesMatching(ctx, c, selector)
		if err != nil {
			diags.AddError("Cannot read the cluster's nodes", err.Error())
			return
		}
		if len(nodes) == 0 {
			diags.AddAttributeWarning(p.AtName("node_selector"), "No nodes in the pool",
				fmt.Sprintf("no live node matches %s %s: the %s pods stay Pending until such nodes join.", p.AtName("node_selector"), object.SelectorString(selector), role))
			return
		}
		var most int64
		for _, n := range nodes {
			a := n.Status.Allocatable[corev1.ResourceName(capacity.DefaultGPUResource)]
			most = max(most, a.Value())
		}
		at := p.AtName("gpus")
		if !t.shorthand() {
			at = p.AtName("containers")
		}
		if t.gpus() > most {
			diags.AddAttributeError(at, "More GPUs per pod than a node has",
				fmt.Sprintf("each %s pod needs %d GPUs on one node, but the most any of the %d nodes matching %s has is %d: "+
					"the group could never be scheduled. Spread it over more, smaller pods (size) or choose a larger pool.",
					role, t.gpus(), len(nodes), object.SelectorString(selector), most))
		}
	}
	if m.Leader == nil {
		check(m.Worker, path.Root("worker"), "leader and worker")
		return diags
	}
	check(m.Leader, path.Root("leader"), "leader")
	if !object.Known(m.Size) || m.Size.ValueInt64() > 1 {
		check(m.Worker, path.Root("worker"), "worker")
	}
	return diags
}

// serverProbes are the model server's probes (container field → probe): the
// startup probe, the liveness probe on the same path of the server's own
// health, which Kubernetes runs only after the startup probe has passed (so
// it needs no initial delay and never fires while the weights load), and
// the readiness probe on readiness_path. Without a startup probe (weights
// unknown) there is no liveness probe either: it would fire during the load.
func serverProbes(m *lwsGroupModel) map[string]any {
	s := m.Serving
	port, health, ready := int64(DefaultServingPort), DefaultHealthPath, DefaultReadinessPath
	if object.Known(s.Port) {
		port = s.Port.ValueInt64()
	}
	if object.Known(s.HealthPath) {
		health = s.HealthPath.ValueString()
	}
	if object.Known(s.ReadinessPath) {
		ready = s.ReadinessPath.ValueString()
	}
	probes := map[string]any{"readinessProbe": httpProbe(ready, port, readinessPeriod, readinessTimeout, readinessFailures)}
	if startup, _, ok := startupProbe(m); ok {
		probes["startupProbe"] = startup
		probes["livenessProbe"] = httpProbe(health, port, livenessPeriod, livenessTimeout, livenessFailures)
	}
	return probes
}

// startupProbe is the leader's startup probe: an HTTP GET of health_path on
// port whose failureThreshold × periodSeconds covers reading the weights from
// the model cache (capacity.StartupProbeBudget through modelcache), with its
// budget; ok is false when the weights are not known.
func startupProbe(m *lwsGroupModel) (map[string]any, capacity.StartupBudget, bool) {
	s := m.Serving
	weights, diags := validateWeights(path.Root("serving"), s.ModelBytes, s.ParamsBillion, s.DType)
	if diags.HasError() || weights == 0 {
		return nil, capacity.StartupBudget{}, false
	}
	port, p := int64(DefaultServingPort), DefaultHealthPath
	if object.Known(s.Port) {
		port = s.Port.ValueInt64()
	}
	if object.Known(s.HealthPath) {
		p = s.HealthPath.ValueString()
	}
	handler := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: p, Port: intstr.FromInt32(int32(port))}}
	cache := modelcache.Cache{Mode: modelcache.ModePVC}
	if m.ModelCache != nil {
		cache = m.ModelCache.cache()
	}
	probe, budget, err := cache.StartupProbe(handler, modelcache.ProbeOptions{SizeBytes: weights})
	if err != nil {
		return nil, budget, false
	}
	return mustUnstructured(probe), budget, true
}
