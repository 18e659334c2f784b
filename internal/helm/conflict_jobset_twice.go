package helm

import (
	"context"
	"fmt"
	"strings"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// oneJobSet: one JobSet controller per cluster. JobSet's CRD and its webhook
// configurations (jobset-mutating-webhook-configuration,
// jobset-validating-webhook-configuration) are cluster-wide objects with
// fixed names, so Helm refuses a second release that renders them ("exists
// and cannot be imported into the current release"), and two controllers
// installed otherwise would both reconcile every JobSet. JobSet comes from
// aiplatform_jobset_controller or as the JobSet subchart of Kubeflow
// Trainer's chart (install_jobset): the two together are the common case.
var oneJobSet = Rule{
	Charts: []string{JobSet.Product, Trainer.Product},
	Check: func(ctx context.Context, c *kube.Client, in Install, planned []Install) (*Conflict, error) {
		if !providesJobSet(in) {
			return nil, nil
		}
		var evidence []string
		for _, p := range planned {
			if providesJobSet(p) {
				evidence = append(evidence, describeJobSetSource(p))
			}
		}
		live, err := LiveJobSet(ctx, c)
		if err != nil {
			return nil, err
		}
		for _, l := range live {
			if l.ID() == in.ID() || isPlanned(planned, l.ID()) {
				continue // this release's own, or one whose plan is judged above
			}
			evidence = append(evidence, "a JobSet controller runs in the cluster ("+l.Found+")")
		}
		if len(evidence) == 0 {
			return nil, nil
		}
		return &Conflict{
			Summary: "A second JobSet controller",
			Detail: fmt.Sprintf("%s would install JobSet, but JobSet is already provided:\n  - %s\n\n"+
				"JobSet's CRD and its webhook configurations (jobset-mutating-webhook-configuration, jobset-validating-webhook-configuration) "+
				"are cluster-wide objects with fixed names: Helm refuses a second release that renders them, and two controllers would both "+
				"reconcile every JobSet.\n\n"+
				"Fix: keep one JobSet. With aiplatform_jobset_controller, set install_jobset = false in aiplatform_trainer (its default) "+
				"and give the Trainer depends_on = [aiplatform_jobset_controller.<name>]; with the Trainer's bundled JobSet, remove the "+
				"aiplatform_jobset_controller; for a JobSet installed otherwise, use it as it is (install_jobset = false) or remove it first.",
				describeJobSetSource(in), strings.Join(evidence, "\n  - ")),
		}, nil
	},
}

// providesJobSet says whether an install brings a JobSet controller.
func providesJobSet(in Install) bool {
	switch in.Chart {
	case JobSet.Product:
		return true
	case Trainer.Product:
		cfg, _ := in.Config.(TrainerConfig)
		return cfg.InstallJobSet
	}
	return false
}

func describeJobSetSource(in Install) string {
	if in.Chart == Trainer.Product {
		return fmt.Sprintf("aiplatform_trainer (release %s) with install_jobset = true, JobSet as its subchart,", in.ID())
	}
	return fmt.Sprintf("aiplatform_jobset_controller (release %s)", in.ID())
}
