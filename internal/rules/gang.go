package rules

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/planned"
)

// What the gang rules share: a runtime whose gang Kueue admits through a
// LocalQueue, and the ClusterQueues that queue leads to.

var gangPath = path.Root("gang").AtName("kueue_queue")

// runtimes are the planned training runtimes.
func runtimes(v *View) []planned.Fact { return facts(planned.All[planned.TrainingRuntime](v.run)) }

// A gangQueue is a LocalQueue a runtime's TrainJobs may name and the
// ClusterQueue it submits to.
type gangQueue struct {
	lq planned.LocalQueue
	cq planned.ClusterQueue
}

// involves names the queue's facts for a finding.
func (q gangQueue) involves() []string { return []string{ref(q.lq), ref(q.cq)} }

// queuesOf resolves the runtime's gang queue: a namespaced runtime's
// TrainJobs name a LocalQueue of its namespace, a cluster runtime's may be
// in any namespace. What cannot be resolved is a warning that says what was
// not checked and which reference lets the plan check it.
func queuesOf(v *View, rt planned.TrainingRuntime) ([]gangQueue, []finding) {
	var out []gangQueue
	var notes []finding
	ns := ""
	if rt.Namespaced() {
		ns = rt.Namespace
	}
	lqs, err := v.LocalQueues(ns, rt.Queue)
	if err != nil {
		return nil, []finding{{path: gangPath, summary: "Cannot read the gang's LocalQueue",
			detail: fmt.Sprintf("the gang's quota was not checked: %v", err)}}
	}
	where := fmt.Sprintf("%q", rt.Queue)
	if ns != "" {
		where = ns + "/" + rt.Queue
	}
	if len(lqs) == 0 {
		return nil, []finding{{path: gangPath, summary: "Gang quota not checked",
			detail: fmt.Sprintf("no LocalQueue %s is planned before this runtime or exists in the cluster, so its quota was not checked here "+
				"(TrainJobs naming it wait until it exists). If the LocalQueue is in this configuration, its plan checks the gang; "+
				"reference it (kueue_queue = aiplatform_local_queue.<name>.name) so that it is planned first and checked here.", where)}}
	}
	for _, lq := range lqs {
		cq, found, err := v.ClusterQueue(lq.ClusterQueue)
		switch {
		case err != nil:
			notes = append(notes, finding{path: gangPath, summary: "Cannot read the gang's ClusterQueue",
				detail: fmt.Sprintf("the quota of ClusterQueue %q (of LocalQueue %s) was not checked: %v", lq.ClusterQueue, lq.FactKey(), err)})
		case !found:
			notes = append(notes, finding{path: gangPath, summary: "Gang quota not checked",
				detail: fmt.Sprintf("LocalQueue %s submits to ClusterQueue %q, which is not planned before this runtime nor exists in the cluster, "+
					"so the gang's quota was not checked here. If it is in this configuration, its plan checks the gang; reference it "+
					"(cluster_queue = aiplatform_cluster_queue.<name>.name in the LocalQueue) so that it is planned first.", lq.FactKey(), lq.ClusterQueue)})
		case !cq.QuotaKnown:
			notes = append(notes, finding{path: gangPath, summary: "Gang quota not checked",
				detail: fmt.Sprintf("the quota of ClusterQueue %q (%s) is known only at apply, so the gang (%d × %d %s) was not checked against it.",
					cq.Name, cq.Source, rt.Nodes, rt.GPUsPerNode, rt.GPUResource)})
		default:
			out = append(out, gangQueue{lq: lq, cq: cq})
		}
	}
	return out, notes
}

// asRuntime returns f as a runtime whose gang Kueue admits.
func asRuntime(f planned.Fact) (planned.TrainingRuntime, bool, bool) {
	rt, ok := f.(planned.TrainingRuntime)
	return rt, ok, ok && rt.Queue != "" && rt.GPUsPerNode > 0 && rt.Nodes > 0
}
