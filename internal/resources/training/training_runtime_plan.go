package training

import (
	"context"
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// Plan: checks across attributes (Validate, no I/O) and against the live
// cluster (ModifyPlan): nodes, the gang queue's quota, Kueue's integrations,
// Volcano.

// KueueTrainJobIntegration is the Kueue integration that admits TrainJobs:
// Kueue reads the queue from the TrainJob's label and suspends it (0 pods)
// until the whole gang is admitted.
const KueueTrainJobIntegration = "trainer.kubeflow.org/trainjob"

// Environment variables Trainer v2.3.0 injects (its reserved names).
var (
	torchReserved = []string{"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"}
	mpiReserved   = []string{"OMPI_MCA_orte_default_hostfile", "OMPI_MCA_plm_rsh_args", "OMPI_MCA_orte_keep_fqdn_hostnames", "OMPI_MCA_orte_set_default_slots"}
)

var (
	localQueueKind = kube.Kind{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "localqueues", Kind: "LocalQueue",
		Namespaced: true, Alternates: []string{"v1beta1"}}
	clusterQueueKind = kube.Kind{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues", Kind: "ClusterQueue",
		Alternates: []string{"v1beta1"}}
	resourceFlavorKind = kube.Kind{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "resourceflavors", Kind: "ResourceFlavor",
		Alternates: []string{"v1beta1"}}
	volcanoPodGroupKind = kube.Kind{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups", Kind: "PodGroup", Namespaced: true}
)

func validateRuntime(m *runtimeModel) diag.Diagnostics {
	var diags diag.Diagnostics
	bad := func(p path.Path, summary, format string, args ...any) {
		diags.AddAttributeError(p, summary, p.String()+": "+fmt.Sprintf(format, args...))
	}
	fw := m.framework()
	gpusKnown := m.Resources == nil || !m.Resources.GPUs.IsUnknown()
	if object.Known(m.ProcsPerNode) && object.Known(m.Framework) && gpusKnown {
		p, n, g := path.Root("procs_per_node"), m.ProcsPerNode.ValueInt64(), m.gpus()
		switch {
		case fw == FrameworkTorch && (g == 0 || n != g):
			bad(p, "No processes per node in Trainer's torch policy",
				"Trainer v2.3.0's torch policy has no numProcPerNode: torchrun starts one process per GPU (here %d) and, without GPUs, one per CPU. "+
					"Remove procs_per_node (or make it the GPUs per node); a TrainJob that needs another count sets spec.trainer.numProcPerNode.", g)
		case fw == FrameworkJAX && n != 1:
			bad(p, "JAX runs one process per node", "Trainer's JAX policy starts one process per node, which sees all its GPUs; procs_per_node = %d cannot be applied.", n)
		}
	}
	if g := m.Gang; g != nil {
		p := path.Root("gang")
		queue, sched := !g.KueueQueue.IsNull(), !g.Scheduler.IsNull()
		switch {
		case queue && sched:
			bad(p, "Two gang mechanisms", "set kueue_queue (Kueue admits the gang) or scheduler (a PodGroup), not both: the two would each hold the pods.")
		case !queue && !sched:
			bad(p, "No gang mechanism", "set kueue_queue or scheduler, or remove gang.")
		}
		if !g.ScheduleTimeout.IsNull() && object.Known(g.Scheduler) && g.Scheduler.ValueString() != SchedulerCoscheduling || !g.ScheduleTimeout.IsNull() && !sched {
			bad(p.AtName("schedule_timeout"), "Schedule timeout without coscheduling",
				"only the coscheduling policy has a timeout (scheduleTimeoutSeconds); Trainer v2.3.0's Volcano policy and Kueue have none.")
		}
	}

	// Environment: names, credentials, Trainer's own names, duplicates.
	seen := map[string]path.Path{}
	name := func(p path.Path, n string, plain bool) {
		switch {
		case !runtimeEnvName.MatchString(n):
			bad(p, "Invalid environment variable name", "%q is not an environment variable name.", n)
		case plain && credentialName.MatchString(n):
			bad(p, "Credential in a plain value", "%q looks like a credential: its value would be stored in the runtime (and in Terraform's state) "+
				"for anyone who can read runtimes. Put it in a Secret and reference it in secret_env.", n)
		case fw == FrameworkTorch && slices.Contains(torchReserved, n) || m.mpi() && slices.Contains(mpiReserved, n):
			bad(p, "Variable set by Trainer", "%q is injected by Trainer's %s policy into every node (rank and rendezvous); it cannot be set here.", n, fw)
		}
		if first, dup := seen[n]; dup {
			bad(p, "Duplicate environment variable", "%q is also set at %s.", n, first)
		}
		seen[n] = p
	}
	if object.Known(m.Env) {
		for _, n := range sortedKeys(object.Strings(m.Env)) {
			name(path.Root("env").AtMapKey(n), n, true)
		}
	}
	for i, s := range m.SecretEnv {
		if object.Known(s.Name) {
			name(path.Root("secret_env").AtListIndex(i).AtName("name"), s.Name.ValueString(), false)
		}
	}
	if c := m.Checkpoint; c != nil && object.Known(c.Env) {
		name(path.Root("checkpoint").AtName("env"), c.Env.ValueString(), false)
	}

	if t := m.Template; t != nil {
		p := path.Root("template")
		diags.Append(podtemplate.Validate(t, p, checkpointVolume)...)
		for i, c := range t.Containers {
			if c.Name.ValueString() == runtimeNode {
				bad(p.AtName("containers").AtListIndex(i).AtName("name"), "The trainer container is typed",
					"the container %q is the trainer's, set by image, command, resources_per_node, env and checkpoint; its other fields go in template.pod_template.", runtimeNode)
			}
		}
		for attr, set := range map[string]bool{"node_selector": !t.NodeSelector.IsNull(), "tolerations": t.Tolerations != nil,
			"priority_class_name": !t.PriorityClassName.IsNull()} {
			if set {
				bad(p.AtName(attr), "Set at the top level", "set %s at the top level of the runtime, where the plan checks it against the nodes.", attr)
			}
		}
		for i, v := range t.Volumes {
			if m.Checkpoint != nil && v.Name.ValueString() == checkpointVolume {
				bad(p.AtName("volumes").AtListIndex(i).AtName("name"), "Volume name taken", "%q is the checkpoint's volume; name this one otherwise.", checkpointVolume)
			}
		}
	}
	return diags
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// planRuntime computes kind and gpus_total and checks the runtime against
// the live nodes, the gang's queue and schedulers.
func planRuntime(ctx context.Context, c *kube.Client, m *runtimeModel) diag.Diagnostics {
	var diags diag.Diagnostics
	setComputed(m)
	if c == nil || !object.Known(m.NumNodes) || m.Resources != nil && !object.Known(m.Resources.GPUs) {
		return diags
	}
	gpus, nodes := m.gpus(), m.NumNodes.ValueInt64()
	if gpus > 0 && !m.NodeSelector.IsUnknown() {
		diags.Append(checkNodes(ctx, c, m, gpus, nodes)...)
	}
	if g := m.Gang; g != nil && object.Known(g.KueueQueue) {
		diags.Append(checkKueue(ctx, c, m, g.KueueQueue.ValueString(), gpus, nodes)...)
	}
	if g := m.Gang; g != nil && g.Scheduler.ValueString() == SchedulerVolcano {
		if served, err := c.Served(ctx, volcanoPodGroupKind); err == nil && !served {
			p := path.Root("gang").AtName("scheduler")
			diags.AddAttributeError(p, "Volcano is not installed",
				p.String()+": the cluster does not serve Volcano's PodGroups (scheduling.volcano.sh/v1beta1), so Trainer could not create the "+
					"gang's PodGroup and no TrainJob of this runtime would start. Install Volcano (aiplatform_volcano) or use kueue_queue.")
		}
	}
	return diags
}

func gpuAlloc(n *corev1.Node, res string) int64 {
	q := n.Status.Allocatable[corev1.ResourceName(res)]
	return q.Value()
}

// checkNodes: one node must hold a pod's GPUs, and the matching nodes must
// hold num_nodes such pods at once.
func checkNodes(ctx context.Context, c *kube.Client, m *runtimeModel, gpus, nodes int64) diag.Diagnostics {
	var diags diag.Diagnostics
	all, err := c.Nodes(ctx)
	if err != nil {
		diags.AddWarning("Cannot read the cluster's nodes", "GPUs per node are not checked: "+err.Error())
		return diags
	}
	selector := object.Labels(m.NodeSelector)
	sel := capacity.Select(all, selector)
	pg := path.Root("resources_per_node").AtName("gpus")
	where := "node_selector " + object.SelectorString(selector)
	if len(selector) == 0 {
		where = "no node_selector (all nodes)"
	}
	if len(sel) == 0 {
		diags.AddAttributeWarning(pg, "No node matches the runtime",
			fmt.Sprintf("%s: no node matches %s, so the GPUs per node cannot be checked; TrainJobs stay Pending until such nodes join.", pg, where))
		return diags
	}
	res := m.gpuResource()
	most, biggest, fit, total := int64(0), "", int64(0), int64(0)
	for _, n := range sel {
		a := gpuAlloc(n, res)
		if a > most || biggest == "" {
			most, biggest = a, n.Name
		}
		fit += a / gpus
		total += a
	}
	if gpus > most {
		diags.AddAttributeError(pg, "More GPUs per node than a node has",
			fmt.Sprintf("%s: each node of a TrainJob asks for %d %s, but the %d nodes matching %s have at most %d allocatable (%s); no pod could "+
				"ever be scheduled. Lower gpus to at most %d (and raise num_nodes), or select a pool with larger nodes.",
				pg, gpus, res, len(sel), where, most, biggest, most))
		return diags
	}
	if nodes > fit {
		pn := path.Root("num_nodes")
		diags.AddAttributeError(pn, "The gang does not fit the nodes",
			fmt.Sprintf("%s: a TrainJob needs %d nodes × %d %s = %d at once, but the %d nodes matching %s have %d allocatable and room for only %d such pods; "+
				"the gang could never start. Lower num_nodes to at most %d, or grow the pool.",
				pn, nodes, gpus, res, nodes*gpus, len(sel), where, total, fit, fit))
	}
	return diags
}

// checkKueue: the live Kueue configuration admits TrainJobs, and the queue's
// ClusterQueue can hold the whole gang in one flavor.
func checkKueue(ctx context.Context, c *kube.Client, m *runtimeModel, queue string, gpus, nodes int64) diag.Diagnostics {
	var diags diag.Diagnostics
	p := path.Root("gang").AtName("kueue_queue")
	if installs, err := helm.LiveKueue(ctx, c); err == nil && len(installs) > 0 {
		ok := false
		for _, in := range installs {
			if cfg, isKueue := in.Config.(helm.KueueConfig); isKueue && slices.Contains(cfg.Frameworks, KueueTrainJobIntegration) {
				ok = true
			}
		}
		if !ok {
			diags.AddAttributeError(p, "Kueue does not manage TrainJobs",
				fmt.Sprintf("%s: the live Kueue configuration (%s) lacks the integration %q, so Kueue would neither hold this runtime's TrainJobs "+
					"nor admit their gang: they would start at once, without quota. Add %q to aiplatform_kueue's integrations.",
					p, installs[0].Found, KueueTrainJobIntegration, KueueTrainJobIntegration))
		}
	}
	if gpus == 0 {
		return diags
	}
	var lqs []map[string]any
	if m.namespaced() {
		if !object.Known(m.Namespace) {
			return diags
		}
		lq, found, err := c.Get(ctx, localQueueKind, kube.Ref{Namespace: m.Namespace.ValueString(), Name: queue})
		if err != nil {
			return diags
		}
		if found {
			lqs = append(lqs, lq.Object)
		}
	} else {
		list, err := c.ObjectsNamed(ctx, localQueueKind, queue)
		if err != nil {
			return diags
		}
		for i := range list {
			lqs = append(lqs, list[i].Object)
		}
	}
	if len(lqs) == 0 {
		diags.AddAttributeWarning(p, "LocalQueue not found",
			fmt.Sprintf("%s: no LocalQueue %q exists yet, so the gang's quota cannot be checked; TrainJobs naming it wait until it does.", p, queue))
		return diags
	}
	checked := map[string]bool{}
	for _, lq := range lqs {
		cqName, _ := object.Field(lq, "spec", "clusterQueue").(string)
		if cqName == "" || checked[cqName] {
			continue
		}
		checked[cqName] = true
		cq, found, err := c.Get(ctx, clusterQueueKind, kube.Ref{Name: cqName})
		if err != nil || !found {
			continue
		}
		diags.Append(checkQuota(ctx, c, m, p, cq.Object, gpus, nodes)...)
	}
	return diags
}

// flavorQuota is one flavor's GPUs in a ClusterQueue.
type flavorQuota struct {
	name      string
	nominal   int64
	borrowing int64 // -1: unbounded (a cohort without a borrowing limit)
}

func checkQuota(ctx context.Context, c *kube.Client, m *runtimeModel, p path.Path, cq map[string]any, gpus, nodes int64) diag.Diagnostics {
	var diags diag.Diagnostics
	res := m.gpuResource()
	cqName, _ := object.Field(cq, "metadata", "name").(string)
	cohort := object.Field(cq, "spec", "cohortName") != nil || object.Field(cq, "spec", "cohort") != nil
	var flavors []flavorQuota
	for _, rg := range object.Items(cq, "spec", "resourceGroups") {
		for _, f := range object.Items(rg, "flavors") {
			for _, r := range object.Items(f, "resources") {
				if r["name"] != res {
					continue
				}
				fq := flavorQuota{name: fmt.Sprint(f["name"]), nominal: quantity(r["nominalQuota"])}
				switch {
				case r["borrowingLimit"] != nil:
					fq.borrowing = quantity(r["borrowingLimit"])
				case cohort:
					fq.borrowing = -1
				}
				flavors = append(flavors, fq)
			}
		}
	}
	need := gpus * nodes
	if len(flavors) == 0 {
		diags.AddAttributeError(p, "The queue has no GPU quota",
			fmt.Sprintf("%s: ClusterQueue %q has no quota for %s, so Kueue could never admit a TrainJob of this runtime (%d %s).", p, cqName, res, need, res))
		return diags
	}
	best, bounded := int64(0), true
	for _, f := range flavors {
		if f.borrowing < 0 {
			bounded = false
		}
		best = max(best, f.nominal+max(f.borrowing, 0))
	}
	if bounded && need > best {
		diags.AddAttributeError(p, "The gang exceeds the queue's quota",
			fmt.Sprintf("%s: a TrainJob of this runtime needs %d nodes × %d = %d %s admitted at once, but ClusterQueue %q holds at most %d in one flavor "+
				"(nominal quota plus borrowing limit; Kueue admits a gang whole or not at all), so every TrainJob would stay suspended with 0 pods. "+
				"Lower num_nodes or gpus, or raise the queue's quota.", p, nodes, gpus, need, res, cqName, best))
		return diags
	}
	// Kueue checks quota, not whether one node holds a pod: a flavor whose
	// nodes are too small admits the gang and its pods sit Pending.
	if len(flavors) > 1 || fungible(cq) {
		for _, f := range flavors {
			rf, found, err := c.Get(ctx, resourceFlavorKind, kube.Ref{Name: f.name})
			if err != nil || !found {
				continue
			}
			labels := map[string]string{}
			for k, v := range object.Fields(rf.Object, "spec", "nodeLabels") {
				labels[k] = fmt.Sprint(v)
			}
			all, err := c.Nodes(ctx)
			if err != nil {
				return diags
			}
			most := int64(0)
			sel := capacity.Select(all, labels)
			for _, n := range sel {
				most = max(most, gpuAlloc(n, res))
			}
			if len(sel) > 0 && most < gpus {
				diags.AddAttributeWarning(p, "A flavor's nodes are too small",
					fmt.Sprintf("%s: ClusterQueue %q may admit this runtime's TrainJobs in flavor %q, whose nodes have at most %d %s, fewer than the %d one pod asks for: "+
						"admitted there, the pods would sit Pending while holding the quota. Remove the flavor from the queue, or make it the last resort.",
						p, cqName, f.name, most, res, gpus))
			}
		}
	}
	return diags
}

// fungible: the ClusterQueue tries its next flavor when it could borrow or preempt.
func fungible(cq map[string]any) bool {
	ff := object.Fields(cq, "spec", "flavorFungibility")
	return ff["whenCanBorrow"] == "TryNextFlavor" || ff["whenCanPreempt"] == "TryNextFlavor"
}

func quantity(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	case string:
		if q, err := validators.ParseQuantity(x); err == nil {
			return q.Value()
		}
	}
	return 0
}
