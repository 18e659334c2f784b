package kueue

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/rules"
)

// maxNamedNodes bounds how many nodes a warning names.
const maxNamedNodes = 5

// planResourceFlavor warns when nodes of a topology-aware flavor lack a
// level label of its Topology: Kueue's TAS leaves such nodes out, so the
// flavor's quota cannot be used on them. The Topology is read live; when it
// does not exist yet (created in the same apply) there is nothing to compare.
func planResourceFlavor(ctx context.Context, c *kube.Client, m *resourceFlavorModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if c != nil && object.Known(m.Name) {
		diags.Append(rules.Plan(ctx, c, resourceFlavorFact(m))...)
	}
	if c == nil || !object.Known(m.TopologyName) || !object.Known(m.NodeLabels) {
		return diags
	}
	topo, found, err := c.Get(ctx, topologyKind, kube.Ref{Name: m.TopologyName.ValueString()})
	if err != nil || !found {
		return diags
	}
	levels := topologyLevels(topo.Object)
	selector := object.Labels(m.NodeLabels)
	nodes, err := rules.NodesMatching(ctx, c, selector)
	if err != nil {
		diags.AddError("Cannot read the cluster's nodes", err.Error())
		return diags
	}
	var lacking []string
	missingLevels := map[string]bool{}
	for _, n := range nodes {
		var miss []string
		for _, l := range levels {
			if _, ok := n.Labels[l]; !ok {
				miss = append(miss, l)
				missingLevels[l] = true
			}
		}
		if len(miss) > 0 {
			lacking = append(lacking, fmt.Sprintf("%s (no %s)", n.Name, strings.Join(miss, ", ")))
		}
	}
	if len(lacking) == 0 {
		return diags
	}
	named := lacking
	if len(named) > maxNamedNodes {
		named = append(named[:maxNamedNodes:maxNamedNodes], fmt.Sprintf("and %d more", len(lacking)-maxNamedNodes))
	}
	labels := make([]string, 0, len(missingLevels))
	for l := range missingLevels {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	diags.AddAttributeWarning(path.Root("topology_name"), "Nodes without topology labels",
		fmt.Sprintf("%d of the %d nodes matching node_labels %s lack a level label of topology %q (%s): %s. "+
			"Kueue's topology-aware scheduling cannot place workloads on them; label them (e.g. with an aiplatform_gpu_node_pool's labels).",
			len(lacking), len(nodes), object.SelectorString(selector), m.TopologyName.ValueString(), strings.Join(labels, ", "), strings.Join(named, "; ")))
	return diags
}
