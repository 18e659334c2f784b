package helm

import (
	"context"
	"fmt"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// trainerNeedsJobSet: Kubeflow Trainer runs every TrainJob as a JobSet, and
// its manager watches JobSets. A Trainer installed without its JobSet
// subchart (the provider's default: the subchart's OCI registry is often out
// of reach, and one JobSet per cluster is the rule) needs JobSet's API in the
// cluster, or planned in this run before it: an aiplatform_jobset_controller
// the Trainer depends on.
var trainerNeedsJobSet = Rule{
	Charts: []string{Trainer.Product},
	Check: func(ctx context.Context, c *kube.Client, in Install, planned []Install) (*Conflict, error) {
		if cfg, _ := in.Config.(TrainerConfig); cfg.InstallJobSet {
			return nil, nil // the release brings its own (judged by oneJobSet)
		}
		if len(ofChart(planned, JobSet.Product)) > 0 {
			return nil, nil
		}
		served, err := JobSetServed(ctx, c)
		if err != nil || served {
			return nil, err
		}
		return &Conflict{
			Summary: "Kubeflow Trainer needs JobSet",
			Detail: fmt.Sprintf("The cluster does not serve JobSet's API (jobsets.jobset.x-k8s.io, v1alpha2), and no aiplatform_jobset_controller "+
				"is planned before this aiplatform_trainer (release %s). Trainer runs every TrainJob as a JobSet and its manager watches "+
				"JobSets, so without JobSet no TrainJob would ever get pods.\n\n"+
				"Fix: add an aiplatform_jobset_controller and give this aiplatform_trainer depends_on = [aiplatform_jobset_controller.<name>] "+
				"(it is then planned and installed first); or install JobSet otherwise before planning the Trainer; or, with a Trainer chart "+
				"that bundles JobSet (the upstream OCI chart oci://ghcr.io/kubeflow/charts/kubeflow-trainer does), set install_jobset = true.",
				in.ID()),
		}, nil
	},
}
