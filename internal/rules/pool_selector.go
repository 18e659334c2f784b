package rules

import (
	"fmt"
	"maps"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/planned"
)

// poolSelector: an InferencePool routes to the pods its selector matches;
// a selector that misses its serving group's pod labels leaves the endpoint
// picker with no endpoint, and the gateway answers with errors. Judged
// against the group planned in this run (its pod labels as planned), else
// the live group's pod template, else serving_group.labels.
var poolSelector = rule{
	judge:  judgePoolSelector,
	judged: func(v *View) []planned.Fact { return facts(planned.All[planned.InferencePool](v.run)) },
}

func judgePoolSelector(v *View, f planned.Fact) ([]finding, bool) {
	p, ok := f.(planned.InferencePool)
	if !ok {
		return nil, false
	}
	if p.GroupKind == "" || p.GroupName == "" {
		return nil, true
	}
	g, found, err := v.ServingGroup(p.GroupKind, p.Namespace, p.GroupName)
	group := fmt.Sprintf("%s %s/%s", p.GroupKind, p.Namespace, p.GroupName)
	switch {
	case err != nil:
		return []finding{{path: path.Root("serving_group"), summary: "Cannot read the serving group",
			detail: fmt.Sprintf("the selector was not compared with the pods of %s: %v", group, err)}}, true
	case !found && p.GroupLabels == nil:
		return []finding{{path: path.Root("serving_group"), summary: "Serving group not checked",
			detail: fmt.Sprintf("%s is not planned before this pool nor exists in the cluster, and serving_group.labels is not set, so the selector "+
				"could not be compared with its pods' labels. If the group is in this configuration, its plan checks it; reference it "+
				"(serving_group.name = %s.<name>.name) so that it is planned first.", group, servingGroupResource(p.GroupKind))}}, true
	case !found:
		labels := maps.Clone(p.GroupLabels)
		if p.GroupKind == catalog.LWSKind.Kind {
			labels[catalog.LWSNameLabel] = p.GroupName
		}
		g = planned.ServingGroup{Kind: p.GroupKind, Namespace: p.Namespace, Name: p.GroupName, PodLabels: labels, Source: "serving_group.labels"}
	}
	missing := selectorMisses(p.Selector, g.PodLabels)
	if len(missing) == 0 {
		return nil, true
	}
	return []finding{{err: true, path: path.Root("selector"), summary: "Selector does not match the serving group", involves: []string{ref(g)},
		detail: fmt.Sprintf("aiplatform_inference_pool %s/%s would select no pod of %s: %s. selector: %s; the group's pod labels (%s): %s.",
			p.Namespace, p.Name, group, strings.Join(missing, "; "), FormatLabels(p.Selector), g.Source, FormatLabels(g.PodLabels))}}, true
}
