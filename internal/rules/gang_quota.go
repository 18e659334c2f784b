package rules

import (
	"fmt"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/planned"
)

// gangQuota: Kueue admits a TrainJob's gang whole or not at all, in one
// flavor of its ClusterQueue, within the flavor's nominal quota plus its
// borrowing limit. A gang larger than that is accepted by the API server
// and then stays suspended with 0 pods forever.
var gangQuota = rule{judge: judgeGangQuota, judged: runtimes}

func judgeGangQuota(v *View, f planned.Fact) ([]finding, bool) {
	rt, isRuntime, queued := asRuntime(f)
	if !queued {
		return nil, isRuntime
	}
	queues, found := queuesOf(v, rt)
	need := rt.GangGPUs()
	for _, q := range queues {
		flavors := q.cq.Flavors(rt.GPUResource)
		where := fmt.Sprintf("(ClusterQueue %q: %s; the runtime's TrainJobs reach it through LocalQueue %q: %s.)", q.cq.Name, q.cq.Source, q.lq.FactKey(), q.lq.Source)
		if len(flavors) == 0 {
			found = append(found, finding{err: true, path: gangPath, summary: "The queue has no GPU quota", involves: q.involves(),
				detail: fmt.Sprintf("ClusterQueue %q has no quota for %s, so Kueue could never admit a TrainJob of %s (%d × %d = %d %s). %s",
					q.cq.Name, rt.GPUResource, rt, rt.Nodes, rt.GPUsPerNode, need, rt.GPUResource, where)})
			continue
		}
		best, bounded := int64(0), true
		for _, fq := range flavors {
			if fq.Borrowing < 0 {
				bounded = false
			}
			best = max(best, fq.Nominal+max(fq.Borrowing, 0))
		}
		if bounded && need > best {
			found = append(found, finding{err: true, path: gangPath, summary: "The gang exceeds the queue's quota", involves: q.involves(),
				detail: fmt.Sprintf("a TrainJob of %s needs %d nodes × %d = %d %s admitted at once, but ClusterQueue %q holds at most %d in one flavor "+
					"(nominal quota plus borrowing limit; Kueue admits a gang whole or not at all), so every TrainJob would stay suspended with 0 pods. "+
					"Lower num_nodes or gpus, or raise the queue's quota. %s",
					rt, rt.Nodes, rt.GPUsPerNode, need, rt.GPUResource, q.cq.Name, best, where)})
		}
	}
	return found, true
}
