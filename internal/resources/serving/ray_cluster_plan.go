package serving

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	tfpath "github.com/hashicorp/terraform-plugin-framework/path"
	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/modelcache"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
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
	var nodes []corev1.Node
	for i, g := range m.WorkerGroups {
		if !object.Known(g.GPUs) || g.GPUs.ValueInt64() == 0 || !object.Known(g.NodeSelector) {
			continue
		}
		if nodes == nil {
			var err error
			if nodes, err = c.Nodes(ctx); err != nil {
				diags.AddError("Cannot read the cluster's nodes", err.Error())
				return diags
			}
		}
		p := tfpath.Root("worker_groups").AtListIndex(i).AtName("gpus")
		selector := object.Labels(g.NodeSelector)
		sel := capacity.Select(nodes, selector)
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
		if g.GPUs.ValueInt64() > most {
			diags.AddAttributeError(p, "More GPUs per worker than a node has",
				fmt.Sprintf("%s: each worker of group %q asks for %d GPUs, but the %d nodes matching node_selector %s have at most %d allocatable (%s); "+
					"no node could run a worker. Lower gpus to at most %d (and raise replicas), or select a pool with larger nodes.",
					p, g.Name.ValueString(), g.GPUs.ValueInt64(), len(sel), object.SelectorString(selector), most, where, most))
		}
	}
	return diags
}
