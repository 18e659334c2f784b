package helm

import (
	"context"
	"fmt"
	"strings"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// oneTrainer: one Kubeflow Trainer per cluster. Its webhook configurations
// have fixed names (validator.trainer.kubeflow.org,
// defaulter.trainer.kubeflow.org) and, since v2.3, its CRDs are templates of
// the release: a second release fails on objects the first owns, and two
// managers installed otherwise would both reconcile every TrainJob.
var oneTrainer = Rule{
	Charts: []string{Trainer.Product},
	Check: func(ctx context.Context, c *kube.Client, in Install, planned []Install) (*Conflict, error) {
		var evidence []string
		for _, p := range ofChart(planned, Trainer.Product) {
			evidence = append(evidence, fmt.Sprintf("aiplatform_trainer (release %s) is planned in this configuration for the same cluster", p.ID()))
		}
		live, err := LiveTrainer(ctx, c)
		if err != nil {
			return nil, err
		}
		for _, l := range live {
			if l.ID() == in.ID() || isPlanned(planned, l.ID()) {
				continue
			}
			evidence = append(evidence, "Kubeflow Trainer runs in the cluster ("+l.Found+")")
		}
		if len(evidence) == 0 {
			return nil, nil
		}
		return &Conflict{
			Summary: "A second Kubeflow Trainer",
			Detail: fmt.Sprintf("aiplatform_trainer (release %s) would install Kubeflow Trainer, but there is one already:\n  - %s\n\n"+
				"Trainer's webhook configurations (validator.trainer.kubeflow.org, defaulter.trainer.kubeflow.org) and its CRDs are "+
				"cluster-wide objects with fixed names: Helm refuses a second release that renders them, and two managers would both "+
				"reconcile every TrainJob.\n\n"+
				"Fix: keep one. To manage an existing Helm release with Terraform, import it (terraform import aiplatform_trainer.<name> "+
				"<namespace>/<release>) with the same name and namespace; otherwise uninstall the other first.",
				in.ID(), strings.Join(evidence, "\n  - ")),
		}, nil
	},
}
