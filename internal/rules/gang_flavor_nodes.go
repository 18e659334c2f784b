package rules

import (
	"fmt"
	"strings"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/planned"
)

// gangFlavorNodes: Kueue checks quota, not whether one node holds a pod. It
// admits a gang in a flavor and injects the flavor's node labels into the
// pods; when the flavor's nodes (as this run's node pools label them) are
// smaller than one pod, the admitted pods sit Pending while holding the
// quota. Refused when no flavor of the queue can hold a pod; a warning
// when some cannot (Kueue may still choose them).
var gangFlavorNodes = rule{judge: judgeGangFlavorNodes, judged: runtimes}

func judgeGangFlavorNodes(v *View, f planned.Fact) ([]finding, bool) {
	rt, isRuntime, queued := asRuntime(f)
	if !queued {
		return nil, isRuntime
	}
	queues, _ := queuesOf(v, rt) // what cannot be resolved, gangQuota says
	var found []finding
	for _, q := range queues {
		var small []string
		var involves []string
		fits := 0
		quotas := q.cq.Flavors(rt.GPUResource)
		for _, fq := range quotas {
			rf, ok, err := v.Flavor(fq.Flavor)
			if err != nil || !ok || !rf.LabelsKnown {
				fits++ // not known: nothing to hold against it
				continue
			}
			selector := merged(rf.NodeLabels, rt.NodeSelector)
			nodes, pools, err := v.NodesMatching(selector)
			if err != nil {
				return append(found, finding{path: gangPath, summary: "Cannot read the cluster's nodes",
					detail: fmt.Sprintf("the flavors' nodes were not checked: %v", err)}), true
			}
			if len(nodes) == 0 {
				fits++ // no node yet: runtimeNodes and the queue's own plan say so
				continue
			}
			most, biggest := largest(nodes, rt.GPUResource)
			if most >= rt.GPUsPerNode {
				fits++
				continue
			}
			refs, by := poolRefs(pools)
			involves = append(append(involves, ref(rf)), refs...)
			small = append(small, fmt.Sprintf("flavor %q (%s) selects %d nodes %s%s with at most %d %s (%s), fewer than the %d one pod asks for",
				rf.Name, rf.Source, len(nodes), FormatLabels(selector), by, most, rt.GPUResource, biggest, rt.GPUsPerNode))
		}
		if len(small) == 0 {
			continue
		}
		involves = append(involves, q.involves()...)
		detail := fmt.Sprintf("each pod of %s asks for %d %s, but in ClusterQueue %q (%s; through LocalQueue %q) %s. ",
			rt, rt.GPUsPerNode, rt.GPUResource, q.cq.Name, q.cq.Source, q.lq.FactKey(), strings.Join(small, "; "))
		if fits == 0 {
			found = append(found, finding{err: true, path: gangPath, summary: "The queue's nodes are too small for one pod", involves: involves,
				detail: detail + "Kueue would admit the gang there and its pods would sit Pending while holding the quota. " +
					"Lower gpus per node (and raise num_nodes), or give the queue a flavor of larger nodes."})
			continue
		}
		found = append(found, finding{path: gangPath, summary: "A flavor's nodes are too small", involves: involves,
			detail: detail + "Admitted there, the pods would sit Pending while holding the quota. Remove the flavor from the queue, or make it the last resort."})
	}
	return found, true
}
