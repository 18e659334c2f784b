// Package rules holds the checks across resources, one file per rule: a
// training runtime's gang against its queue's quota, against Kueue's
// integrations and against the nodes of its flavors; an inference pool's
// selector against its serving group's pods; a MultiKueue config's workers
// against the MultiKueue clusters. (The checks of one resource against the
// nodes, such as an NCCL check's or a serving group's, read the nodes as
// this run's node pools label them: NodesMatching.) (The rules between installs
// are internal/helm's conflict rules; they record in the same registry.)
//
// Every resource records what it plans in the run's registry
// (internal/planned) and asks Plan for what the rules find. A rule judges
// one kind of fact (a runtime, a pool) through a View: the facts planned in
// this run first, the live cluster second. When the judged resource is
// planned after the others (an attribute reference orders it so), the rule
// judges it with all of them known. When another resource the rule reads is
// planned after it (no edge between them), that resource's plan judges
// again every planned fact that involves it, and an error found then fails
// that resource's plan, naming both. So a conflict is refused at plan in
// either order; the side planned first, which cannot know what is still to
// come, says in a warning what it could not check and which reference lets
// it check.
package rules

import (
	"context"
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/planned"
)

// A rule judges the planned facts of one type against the others.
type rule struct {
	// judge returns what is wrong with f, or ok=false when f is not of the
	// type the rule judges.
	judge func(v *View, f planned.Fact) (found []finding, ok bool)
	// judged returns the planned facts of the type the rule judges.
	judged func(v *View) []planned.Fact
}

// A finding is one thing a rule found wrong, or could not check.
type finding struct {
	err     bool
	path    path.Path // in the judged resource's schema
	summary string
	detail  string
	// involves names the other facts the finding depends on (ref), so that
	// their plan can refuse what it makes wrong.
	involves []string
}

var all = []rule{gangQuota, gangIntegrations, gangFlavorNodes, runtimeNodes, poolSelector, multiKueueClusters}

// Plan records f as planned in the run of c and returns what the rules
// find: with f itself when f is a fact a rule judges, and the errors f's
// plan causes in the planned facts that involve it.
func Plan[T planned.Fact](ctx context.Context, c *kube.Client, f T) diag.Diagnostics {
	var diags diag.Diagnostics
	if c == nil {
		return diags
	}
	v := newView(ctx, c)
	planned.Record(v.run, f)
	self := ref(f)
	for _, r := range all {
		if found, ok := r.judge(v, f); ok {
			for _, x := range found {
				add(&diags, x.err, x.path, x.summary, x.detail)
			}
			continue
		}
		for _, j := range r.judged(v) {
			found, _ := r.judge(v, j)
			for _, x := range found {
				if x.err && slices.Contains(x.involves, self) {
					add(&diags, true, subjectPath(f), x.summary,
						fmt.Sprintf("Planning %s makes a check of %s fail: %s", describe(f), describe(j), x.detail))
				}
			}
		}
	}
	return diags
}

func add(diags *diag.Diagnostics, err bool, p path.Path, summary, detail string) {
	if p.Equal(path.Empty()) {
		if err {
			diags.AddError(summary, detail)
		} else {
			diags.AddWarning(summary, detail)
		}
		return
	}
	detail = p.String() + ": " + detail
	if err {
		diags.AddAttributeError(p, summary, detail)
	} else {
		diags.AddAttributeWarning(p, summary, detail)
	}
}

// ref names a fact for involves: its type and key.
func ref(f planned.Fact) string { return fmt.Sprintf("%T %s", f, f.FactKey()) }

// describe names a fact's resource in a diagnostic.
func describe(f planned.Fact) string {
	switch x := f.(type) {
	case planned.TrainingRuntime:
		return x.String()
	case planned.LocalQueue:
		return fmt.Sprintf("aiplatform_local_queue %q", x.FactKey())
	case planned.ClusterQueue:
		return fmt.Sprintf("aiplatform_cluster_queue %q", x.Name)
	case planned.ResourceFlavor:
		return fmt.Sprintf("aiplatform_resource_flavor %q", x.Name)
	case planned.NodePool:
		return fmt.Sprintf("aiplatform_gpu_node_pool %q", x.Name)
	case planned.InferencePool:
		return fmt.Sprintf("aiplatform_inference_pool %q", x.FactKey())
	case planned.ServingGroup:
		return fmt.Sprintf("%s %q", servingGroupResource(x.Kind), x.Namespace+"/"+x.Name)
	case planned.MultiKueueCluster:
		return fmt.Sprintf("aiplatform_multikueue_cluster %q", x.Name)
	case planned.MultiKueueConfig:
		return fmt.Sprintf("aiplatform_multikueue_config %q", x.Name)
	case helm.Install:
		if x.Chart == helm.Kueue.Product {
			return fmt.Sprintf("aiplatform_kueue (release %s)", x.ID())
		}
		return fmt.Sprintf("%s (release %s)", x.Chart, x.ID())
	}
	return f.FactKey()
}

func servingGroupResource(kind string) string {
	if kind == "LeaderWorkerSet" {
		return "aiplatform_lws_group"
	}
	return "aiplatform_model_deployment"
}

// subjectPath is the attribute of f whose plan makes another check fail.
func subjectPath(f planned.Fact) path.Path {
	switch f.(type) {
	case planned.LocalQueue:
		return path.Root("cluster_queue")
	case planned.ClusterQueue:
		return path.Root("resource_groups")
	case planned.ResourceFlavor:
		return path.Root("node_labels")
	case planned.NodePool:
		return path.Root("selector")
	case helm.Install:
		return path.Root("integrations")
	}
	return path.Empty()
}

// facts converts a list of planned facts to the interface.
func facts[T planned.Fact](list []T) []planned.Fact {
	out := make([]planned.Fact, len(list))
	for i, f := range list {
		out[i] = f
	}
	return out
}
