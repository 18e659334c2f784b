package rules

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/planned"
)

// multiKueueClusters: every worker a MultiKueueConfig names is a
// MultiKueueCluster, planned in this run or live. Kueue keeps a config
// whose cluster is missing, but dispatches to no worker of that name (and
// the admission check that names the config is inactive while none of its
// clusters is), so a misspelt name is warned about at plan: a warning, not
// an error, because a worker may be added outside this configuration.
var multiKueueClusters = rule{
	judge:  judgeMultiKueueClusters,
	judged: func(v *View) []planned.Fact { return facts(planned.All[planned.MultiKueueConfig](v.run)) },
}

func judgeMultiKueueClusters(v *View, f planned.Fact) ([]finding, bool) {
	cfg, ok := f.(planned.MultiKueueConfig)
	if !ok {
		return nil, false
	}
	var out []finding
	for i, name := range cfg.Clusters {
		if name == "" {
			continue
		}
		if _, ok := planned.Lookup[planned.MultiKueueCluster](v.run, name); ok {
			continue
		}
		at := path.Root("clusters").AtListIndex(i)
		_, found, err := v.get(catalog.KueueMultiKueueCluster, kube.Ref{Name: name})
		switch {
		case err != nil:
			out = append(out, finding{path: at, summary: "Cannot read the MultiKueue clusters",
				detail: fmt.Sprintf("whether MultiKueueCluster %q exists was not checked: %v", name, err)})
		case !found:
			out = append(out, finding{path: at, summary: "MultiKueue cluster not found",
				detail: fmt.Sprintf("no aiplatform_multikueue_cluster %q is planned before this config and no MultiKueueCluster of that name "+
					"exists, so Kueue dispatches to no worker of that name. If this configuration declares it, reference it "+
					"(clusters = [aiplatform_multikueue_cluster.<name>.name]) so that it is planned first; if the name is misspelt, fix it.", name)})
		}
	}
	return out, true
}
