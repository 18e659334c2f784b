package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/planned"
)

// gangIntegrations: Kueue holds and admits a runtime's TrainJobs only with
// its trainer.kubeflow.org/trainjob integration; without it they start at
// once, without quota. And with or without a gang queue, Kueue needs
// batch/job: Kueue v0.17.0's chart registers its Job webhook whatever the
// integrations, and that webhook fails every Job (a TrainJob's JobSet's
// too) while batch/job is off (seen with the real Kueue in testenv).
// Judged against the Kueue planned in this run, else the live one.
var gangIntegrations = rule{judge: judgeGangIntegrations, judged: runtimes}

func judgeGangIntegrations(v *View, f planned.Fact) ([]finding, bool) {
	rt, ok := f.(planned.TrainingRuntime)
	if !ok {
		return nil, false
	}
	queued := rt.Queue != ""
	installs, err := v.Kueue()
	switch {
	case err != nil:
		return []finding{{path: gangPath, summary: "Cannot read Kueue's configuration",
			detail: fmt.Sprintf("Kueue's integrations were not checked: %v", err)}}, true
	case len(installs) == 0 && queued:
		return []finding{{path: gangPath, summary: "Kueue's integrations not checked",
			detail: "no aiplatform_kueue is planned before this runtime and no Kueue configuration is in the cluster, so whether Kueue admits " +
				"this runtime's TrainJobs (integration " + catalog.KueueTrainJobIntegration + ") was not checked here. If aiplatform_kueue is " +
				"in this configuration, its plan checks it; add depends_on = [aiplatform_kueue.<name>] (or reference it) so that it is planned first."}}, true
	case len(installs) == 0:
		return nil, true
	}
	var frameworks, involves []string
	for _, in := range installs {
		if cfg, ok := in.Config.(helm.KueueConfig); ok {
			frameworks = append(frameworks, cfg.Frameworks...)
		}
		involves = append(involves, ref(in))
	}
	var missing []string
	if queued && !slices.Contains(frameworks, catalog.KueueTrainJobIntegration) {
		missing = append(missing, catalog.KueueTrainJobIntegration)
	}
	if !slices.Contains(frameworks, catalog.KueueJobIntegration) {
		missing = append(missing, catalog.KueueJobIntegration)
	}
	if len(missing) == 0 {
		return nil, true
	}
	kueue := describe(installs[0])
	if installs[0].Found != "" {
		kueue = "the live Kueue configuration (" + installs[0].Found + ")"
	}
	why := fmt.Sprintf("%s lacks the integration(s) %s that %s needs. ", kueue, strings.Join(quoted(missing), ", "), rt)
	if slices.Contains(missing, catalog.KueueTrainJobIntegration) {
		why += "Without " + catalog.KueueTrainJobIntegration + " Kueue neither holds the runtime's TrainJobs nor admits their gang: they would start at once, without quota. "
	}
	if slices.Contains(missing, catalog.KueueJobIntegration) {
		why += "Without " + catalog.KueueJobIntegration + " Kueue's Job webhook (which its chart registers anyway) refuses every Job, so a TrainJob's JobSet could create none. "
	}
	why += "Add them to aiplatform_kueue's integrations."
	if queued {
		return []finding{{err: true, path: gangPath, summary: "Kueue cannot admit this runtime's TrainJobs", detail: why, involves: involves}}, true
	}
	return []finding{{path: path.Empty(), summary: "Kueue would refuse this runtime's Jobs", detail: why, involves: involves}}, true
}

func quoted(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
