package installs

import (
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
)

type kuberayModel struct {
	releaseModel
}

// NewKubeRayOperator is aiplatform_kuberay_operator.
func NewKubeRayOperator() resource.Resource {
	return newRelease[kuberayModel](chartSpec[kuberayModel]{
		TypeName: "kuberay_operator",
		Chart:    helm.KubeRay,
		Description: "The KubeRay operator (RayCluster, RayJob and RayService CRDs and their controller) installed from its Helm " +
			"chart with the Helm SDK, for `aiplatform_ray_cluster`. Install and upgrade are atomic and wait until every object " +
			"is ready; every refresh compares each object of the release with the live cluster (`drift`). Chart settings go in " +
			"`values`.\n\n" +
			"For Kueue to hold Ray clusters that do not fit their queue, give `aiplatform_kueue` the `ray.io/raycluster` integration.\n\n" +
			"The default chart is KubeRay's upstream repository `https://ray-project.github.io/kuberay-helm/`, chart `kuberay-operator`; " +
			"the provider's tests run offline against a stand-in chart with KubeRay's own CRDs, so the upstream chart's values were not " +
			"exercised by them.",
	})
}
