package rules

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/path"
	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/planned"
)

// runtimeNodes: one node must hold a runtime's pod, and the nodes its
// node_selector picks (as this run's node pools label them) must hold
// num_nodes such pods at once.
var runtimeNodes = rule{judge: judgeRuntimeNodes, judged: runtimes}

func judgeRuntimeNodes(v *View, f planned.Fact) ([]finding, bool) {
	rt, ok := f.(planned.TrainingRuntime)
	if !ok {
		return nil, false
	}
	if rt.GPUsPerNode == 0 || !rt.SelectorKnown {
		return nil, true
	}
	pg := path.Root("resources_per_node").AtName("gpus")
	sel, pools, err := v.NodesMatching(rt.NodeSelector)
	if err != nil {
		return []finding{{path: pg, summary: "Cannot read the cluster's nodes", detail: "GPUs per node are not checked: " + err.Error()}}, true
	}
	where := "node_selector " + FormatLabels(rt.NodeSelector)
	if len(rt.NodeSelector) == 0 {
		where = "no node_selector (all nodes)"
	}
	if len(sel) == 0 {
		return []finding{{path: pg, summary: "No node matches the runtime",
			detail: fmt.Sprintf("no node matches %s, and no aiplatform_gpu_node_pool planned before this runtime gives nodes those labels, so the GPUs "+
				"per node cannot be checked; TrainJobs stay Pending until such nodes join. If a pool of this configuration labels them, "+
				"reference it (node_selector = aiplatform_gpu_node_pool.<name>.labels) so that it is planned first.", where)}}, true
	}
	refs, by := poolRefs(pools)
	most, biggest := largest(sel, rt.GPUResource)
	if rt.GPUsPerNode > most {
		return []finding{{err: true, path: pg, summary: "More GPUs per node than a node has", involves: refs,
			detail: fmt.Sprintf("each node of a TrainJob of %s asks for %d %s, but the %d nodes matching %s%s have at most %d allocatable (%s); no pod "+
				"could ever be scheduled. Lower gpus to at most %d (and raise num_nodes), or select a pool with larger nodes.",
				rt, rt.GPUsPerNode, rt.GPUResource, len(sel), where, by, most, biggest, most)}}, true
	}
	fit, total := int64(0), int64(0)
	for _, n := range sel {
		q := n.Status.Allocatable[corev1.ResourceName(rt.GPUResource)]
		fit += q.Value() / rt.GPUsPerNode
		total += q.Value()
	}
	if rt.Nodes > fit {
		return []finding{{err: true, path: path.Root("num_nodes"), summary: "The gang does not fit the nodes", involves: refs,
			detail: fmt.Sprintf("a TrainJob of %s needs %d nodes × %d %s = %d at once, but the %d nodes matching %s%s have %d allocatable and room for "+
				"only %d such pods; the gang could never start. Lower num_nodes to at most %d, or grow the pool.",
				rt, rt.Nodes, rt.GPUsPerNode, rt.GPUResource, rt.GangGPUs(), len(sel), where, by, total, fit, fit)}}, true
	}
	return nil, true
}
