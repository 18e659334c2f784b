package installs

import (
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
)

type jobSetModel struct {
	releaseModel
}

// NewJobSetController is aiplatform_jobset_controller.
func NewJobSetController() resource.Resource {
	return newRelease[jobSetModel](chartSpec[jobSetModel]{
		TypeName: "jobset_controller",
		Chart:    helm.JobSet,
		Description: "The JobSet controller (the `jobsets.jobset.x-k8s.io` CRD, its controller and webhooks) installed from its Helm " +
			"chart with the Helm SDK: what Kubeflow Trainer (`aiplatform_trainer`) runs every TrainJob on. Install and upgrade are " +
			"atomic and wait until every object is ready; every refresh compares each object of the release with the live cluster " +
			"(`drift`). Chart settings go in `values`.\n\n" +
			"**One JobSet per cluster**: JobSet's CRD and webhook configurations are cluster-wide objects with fixed names, so the plan " +
			"fails when another JobSet controller runs in the cluster or is planned in the same configuration — including the JobSet " +
			"subchart of an `aiplatform_trainer` with `install_jobset = true` (the message says what to change).\n\n" +
			"**Namespace**: the controller takes its namespace from its service account (the in-pod namespace file) for the webhook " +
			"certificate it issues itself, and falls back to `jobset-system` without one; any namespace works in a cluster with kubelets. " +
			"The provider's test cluster (testenv's pod runner) runs JobSet only in `jobset-system`.\n\n" +
			"The default chart is JobSet's upstream OCI chart `oci://registry.k8s.io/jobset/charts/jobset`, whose versions are the JobSet " +
			"releases without the `v` (`0.12.0`; its image is `registry.k8s.io/jobset/jobset:v0.12.0`). The provider's tests install the " +
			"same chart from the `sigs.k8s.io/jobset` v0.12.0 module (`charts/jobset`, also version `0.12.0`), whose values name the " +
			"staging image `us-central1-docker.pkg.dev/k8s-staging-images/jobset/jobset:main` that JobSet's release process replaces: " +
			"with a chart from a source tree, set `image.repository` and `image.tag` in `values`. The registry itself was not reached offline.",
	})
}
