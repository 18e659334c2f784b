package installs

import (
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
)

type lwsModel struct {
	releaseModel
}

// NewLWSController is aiplatform_lws_controller.
func NewLWSController() resource.Resource {
	return newRelease[lwsModel](chartSpec[lwsModel]{
		TypeName: "lws_controller",
		Chart:    helm.LWS,
		Description: "The LeaderWorkerSet controller (the `leaderworkerset.x-k8s.io` CRD, its controller and webhooks) installed from " +
			"its Helm chart with the Helm SDK, for `aiplatform_lws_group`. Install and upgrade are atomic and wait until every " +
			"object is ready; every refresh compares each object of the release with the live cluster (`drift`). Chart settings " +
			"go in `values`.\n\n" +
			"The default chart is LWS's upstream OCI chart `oci://registry.k8s.io/lws/charts/lws`, whose versions are the LWS " +
			"releases without the `v` (`0.9.0`). The provider's tests install the same chart from the `sigs.k8s.io/lws` v0.9.0 " +
			"module (chart version `0.1.0` there); the registry itself was not reached offline.",
	})
}
