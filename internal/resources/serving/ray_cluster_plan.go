package serving

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	tfpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/modelcache"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/rules"
)

// Plan: checks across attributes, and the live checks of ModifyPlan.

func validateRayCluster(m *rayClusterModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if object.Known(m.Name) && len(m.Name.ValueString()+"-head-svc") > 63 {
		diags.AddAttributeError(tfpath.Root("name"), "Name too long",
			fmt.Sprintf("%q is %d characters; KubeRay's head Service %q must fit in 63, so the name may have at most 54.",
				m.Name.ValueString(), len(m.Name.ValueString()), m.Name.ValueString()+"-head-svc"))
	}
	seen := map[string]int{}
	for i, g := range m.WorkerGroups {
		p := tfpath.Root("worker_groups").AtListIndex(i)
		if object.Known(g.Name) {
			if j, dup := seen[g.Name.ValueString()]; dup {
				diags.AddAttributeError(p.AtName("name"), "Duplicate worker group",
					fmt.Sprintf("%q is also the name of worker_groups[%d]; group names must be unique.", g.Name.ValueString(), j))
			}
			seen[g.Name.ValueString()] = i
		}
		if object.Known(g.MinReplicas) && object.Known(g.Replicas) && g.Replicas.ValueInt64() < g.MinReplicas.ValueInt64() {
			diags.AddAttributeError(p.AtName("replicas"), "Replicas below min_replicas",
				fmt.Sprintf("replicas = %d is less than min_replicas = %d.", g.Replicas.ValueInt64(), g.MinReplicas.ValueInt64()))
		}
		if object.Known(g.MaxReplicas) && object.Known(g.Replicas) && g.Replicas.ValueInt64() > g.MaxReplicas.ValueInt64() {
			diags.AddAttributeError(p.AtName("replicas"), "Replicas above max_replicas",
				fmt.Sprintf("replicas = %d is more than max_replicas = %d.", g.Replicas.ValueInt64(), g.MaxReplicas.ValueInt64()))
		}
		if object.Known(g.MaxReplicas) && object.Known(g.MinReplicas) && g.MinReplicas.ValueInt64() > g.MaxReplicas.ValueInt64() {
			diags.AddAttributeError(p.AtName("min_replicas"), "min_replicas above max_replicas",
				fmt.Sprintf("min_replicas = %d is more than max_replicas = %d.", g.MinReplicas.ValueInt64(), g.MaxReplicas.ValueInt64()))
		}
	}
	if a := m.Autoscaling; a != nil && object.Known(a.IdleTimeout) {
		p := tfpath.Root("autoscaling").AtName("idle_timeout")
		if _, err := raySeconds(a.IdleTimeout); err != nil {
			diags.AddAttributeError(p, "Invalid idle timeout", fmt.Sprintf("%v (e.g. \"60s\", \"5m\").", err))
		} else if object.Known(a.Enabled) && !a.Enabled.ValueBool() {
			diags.AddAttributeWarning(p, "Idle timeout without autoscaling", "has no effect while autoscaling.enabled = false.")
		}
	}
	if m.Head != nil {
		diags.Append(validateRayPod(m, &m.Head.rayPod, tfpath.Root("head"), rayHeadContainer, types.MapNull(types.StringType), nil)...)
	}
	for i := range m.WorkerGroups {
		g := &m.WorkerGroups[i]
		diags.Append(validateRayPod(m, &g.rayPod, tfpath.Root("worker_groups").AtListIndex(i), rayWorkerContainer, g.NodeSelector, g.Tolerations)...)
	}
	if mc := m.ModelCache; mc != nil {
		p := tfpath.Root("model_cache")
		mode := mc.Mode.ValueString()
		if mc.Mode.IsNull() {
			mode = modelcache.ModePVC // the default, not yet in the configuration
		}
		switch {
		case mc.Mode.IsUnknown():
		case mode == modelcache.ModePVC && mc.ClaimName.IsNull():
			diags.AddAttributeError(p.AtName("claim_name"), "Missing claim", "mode pvc mounts the cache's claim; give claim_name.")
		case mode == modelcache.ModeNodeLocal && mc.HostPath.IsNull():
			diags.AddAttributeError(p.AtName("host_path"), "Missing host path", "mode node_local mounts the node's copy; give host_path.")
		}
		if object.Known(mc.MountPath) && !strings.HasPrefix(mc.MountPath.ValueString(), "/") {
			diags.AddAttributeError(p.AtName("mount_path"), "Relative mount path", fmt.Sprintf("%q must be an absolute path.", mc.MountPath.ValueString()))
		}
		if object.Known(mc.SubPath) && (mc.SubPath.ValueString() == "" || strings.HasPrefix(mc.SubPath.ValueString(), "/") || strings.Contains(mc.SubPath.ValueString(), "..")) {
			diags.AddAttributeError(p.AtName("sub_path"), "Invalid sub path", fmt.Sprintf("%q must be a relative path inside the cache.", mc.SubPath.ValueString()))
		}
	}
	return diags
}

// planRayCluster computes the addresses and checks each worker group's GPUs
// against the live nodes its node selector matches (one listing per run).
func planRayCluster(ctx context.Context, c *kube.Client, m *rayClusterModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if object.Known(m.Name) && object.Known(m.Namespace) && (m.Head == nil || !m.Head.RayStartParams.IsUnknown()) {
		raySetAddresses(m, m.Name.ValueString(), m.Namespace.ValueString())
	}
	if c == nil {
		return diags
	}
	var nodes []*corev1.Node
	for i, g := range m.WorkerGroups {
		gpus, selectorAttr := rayGroupGPUs(&g), g.NodeSelector
		if g.Template != nil && selectorAttr.IsNull() {
			selectorAttr = g.Template.NodeSelector
		}
		if gpus == 0 || !object.Known(selectorAttr) {
			continue
		}
		if nodes == nil {
			var err error
			// As this run's node pools label them (internal/rules).
			if nodes, err = rules.NodesMatching(ctx, c, nil); err != nil {
				diags.AddError("Cannot read the cluster's nodes", err.Error())
				return diags
			}
		}
		p := tfpath.Root("worker_groups").AtListIndex(i).AtName("gpus")
		if !object.Known(g.GPUs) {
			p = tfpath.Root("worker_groups").AtListIndex(i).AtName("template")
		}
		selector := object.Labels(selectorAttr)
		sel := selectNodes(nodes, selector)
		if len(sel) == 0 {
			diags.AddAttributeWarning(p, "No node matches the worker group",
				fmt.Sprintf("%s: no node matches node_selector %s, so the GPUs per worker cannot be checked and the workers will stay Pending until such nodes join.",
					p, object.SelectorString(selector)))
			continue
		}
		most, where := int64(0), ""
		for _, n := range sel {
			q := n.Status.Allocatable[corev1.ResourceName(capacity.DefaultGPUResource)]
			if q.Value() > most || where == "" {
				most, where = q.Value(), n.Name
			}
		}
		if gpus > most {
			diags.AddAttributeError(p, "More GPUs per worker than a node has",
				fmt.Sprintf("%s: each worker of group %q asks for %d GPUs, but the %d nodes matching node_selector %s have at most %d allocatable (%s); "+
					"no node could run a worker. Lower gpus to at most %d (and raise replicas), or select a pool with larger nodes.",
					p, g.Name.ValueString(), gpus, len(sel), object.SelectorString(selector), most, where, most))
		}
	}
	return diags
}

// rayGroupGPUs is the GPUs a worker asks for: gpus, else what its template's
// containers request; 0 when unknown.
func rayGroupGPUs(g *rayWorkerGroup) int64 {
	if object.Known(g.GPUs) {
		return g.GPUs.ValueInt64()
	}
	if g.GPUs.IsUnknown() || g.Template == nil {
		return 0
	}
	q := g.Template.Request(capacity.DefaultGPUResource)
	return q.Value()
}

// validateRayPod checks a head's or worker group's template against the
// typed attributes: each field is given in one place, the Ray container is
// the first, every other container has an image.
func validateRayPod(m *rayClusterModel, p *rayPod, at tfpath.Path, def string, selector types.Map, tolerations []object.Toleration) diag.Diagnostics {
	var diags diag.Diagnostics
	t := p.Template
	if t == nil {
		return diags
	}
	tp := at.AtName("template")
	var extra []string
	if m.ModelCache != nil {
		extra = append(extra, modelcache.DefaultVolumeName)
		for i, v := range t.Volumes {
			if v.Name.ValueString() == modelcache.DefaultVolumeName {
				diags.AddAttributeError(tp.AtName("volumes").AtListIndex(i).AtName("name"), "Volume name taken",
					fmt.Sprintf("%q is the model cache's volume (model_cache); give this volume another name.", modelcache.DefaultVolumeName))
			}
		}
	}
	diags.Append(podtemplate.Validate(t, tp, extra...)...)
	if p.ContainerName.IsUnknown() {
		return diags
	}
	name := p.containerName(def)
	twice := func(at tfpath.Path, attr string) {
		diags.AddAttributeError(at, "Set in two places",
			fmt.Sprintf("%s sets what %s sets too; set it in one place.", at, attr))
	}
	for i, c := range t.Containers {
		cp := tp.AtName("containers").AtListIndex(i)
		if c.Name.ValueString() != name {
			if c.Image.IsNull() {
				diags.AddAttributeError(cp.AtName("image"), "Missing image",
					fmt.Sprintf("container %q needs an image: only the Ray container (%q) gets the cluster's.", c.Name.ValueString(), name))
			}
			continue
		}
		if i != 0 {
			diags.AddAttributeError(cp, "Ray container not first",
				fmt.Sprintf("%q is the Ray container (container_name) and must be the first of containers: KubeRay runs Ray in the pod's first container.", name))
		}
		for _, r := range []struct {
			typed    bool
			attr, as string
		}{
			{!p.CPU.IsNull(), "cpu", "cpu"},
			{!p.Memory.IsNull(), "memory", "memory"},
			{!p.GPUs.IsNull(), "gpus", capacity.DefaultGPUResource},
		} {
			if !r.typed {
				continue
			}
			for _, f := range []struct {
				name string
				q    types.Map
			}{{"requests", c.Requests}, {"limits", c.Limits}} {
				if _, ok := f.q.Elements()[r.as]; ok {
					twice(cp.AtName(f.name).AtMapKey(r.as), at.AtName(r.attr).String())
				}
			}
		}
	}
	if !selector.IsNull() && !t.NodeSelector.IsNull() {
		twice(tp.AtName("node_selector"), at.AtName("node_selector").String())
	}
	if tolerations != nil && t.Tolerations != nil {
		twice(tp.AtName("tolerations"), at.AtName("tolerations").String())
	}
	if !m.QueueName.IsNull() {
		if _, ok := t.Labels.Elements()[rayQueueLabel]; ok {
			twice(tp.AtName("labels").AtMapKey(rayQueueLabel), "queue_name")
		}
	}
	return diags
}

// selectNodes returns the nodes matching selector.
func selectNodes(nodes []*corev1.Node, selector map[string]string) []*corev1.Node {
	var out []*corev1.Node
	for _, n := range nodes {
		if capacity.Matches(n.Labels, selector) {
			out = append(out, n)
		}
	}
	return out
}
