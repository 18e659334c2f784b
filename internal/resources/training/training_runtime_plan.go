package training

import (
	"context"
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/planned"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/rules"
)

// Plan: checks across attributes (Validate, no I/O), then across resources
// (ModifyPlan, internal/rules): nodes, the gang queue's quota and flavors,
// Kueue's integrations — as this run plans them, else live — and Volcano.

// The Kueue integrations a runtime needs (internal/catalog states them).
const (
	KueueTrainJobIntegration = catalog.KueueTrainJobIntegration
	KueueJobIntegration      = catalog.KueueJobIntegration
)

// Environment variables Trainer v2.3.0 injects (its reserved names).
var (
	torchReserved = []string{"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"}
	mpiReserved   = []string{"OMPI_MCA_orte_default_hostfile", "OMPI_MCA_plm_rsh_args", "OMPI_MCA_orte_keep_fqdn_hostnames", "OMPI_MCA_orte_set_default_slots"}
)

var volcanoPodGroupKind = catalog.VolcanoPodGroupKind

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
		case m.mpi() && n == 1 && g > 1:
			bad(p, "One MPI slot is read as \"per GPU\"", "Trainer v2.3.0's MPI policy replaces 1 by the GPUs per node (%d) when it builds the hostfile, "+
				"so procs_per_node = 1 cannot be applied with GPUs; leave it unset for one process per GPU.", g)
		case fw == FrameworkJAX && n != 1:
			bad(p, "JAX runs one process per node", "Trainer's JAX policy starts one process per node, which sees all its GPUs; procs_per_node = %d cannot be applied.", n)
		}
	}
	if m.mpi() && object.Known(m.NumNodes) && m.NumNodes.ValueInt64() < 2 {
		bad(path.Root("num_nodes"), "An MPI runtime has two nodes at least",
			"Trainer's MPI policy runs a launcher and at least one sshd node (the launcher counts as a node): num_nodes must be 2 or more.")
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
// the nodes, the gang's queue and Kueue (internal/rules: as planned in this
// run, else live) and against the schedulers.
func planRuntime(ctx context.Context, c *kube.Client, m *runtimeModel) diag.Diagnostics {
	var diags diag.Diagnostics
	setComputed(m)
	if c == nil || !object.Known(m.NumNodes) || m.Resources != nil && !object.Known(m.Resources.GPUs) ||
		!object.Known(m.Name) || m.namespaced() && !object.Known(m.Namespace) {
		return diags
	}
	diags.Append(rules.Plan(ctx, c, runtimeFact(m))...)
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

// runtimeFact is what the runtime records in the run's plan registry.
func runtimeFact(m *runtimeModel) planned.TrainingRuntime {
	f := planned.TrainingRuntime{Kind: "ClusterTrainingRuntime", Name: m.Name.ValueString(), Nodes: m.NumNodes.ValueInt64(),
		GPUsPerNode: m.gpus(), GPUResource: m.gpuResource(), SelectorKnown: !m.NodeSelector.IsUnknown()}
	if m.namespaced() {
		f.Kind, f.Namespace = "TrainingRuntime", m.Namespace.ValueString()
	}
	if f.SelectorKnown {
		f.NodeSelector = object.Labels(m.NodeSelector)
	}
	if g := m.Gang; g != nil && object.Known(g.KueueQueue) {
		f.Queue = g.KueueQueue.ValueString()
	}
	return f
}
