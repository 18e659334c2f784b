package catalog

import "github.com/aiplatform/terraform-provider-aiplatform/internal/kube"

// KubeRay's operator: KubeRay's upstream chart repository; the module's
// config/crd/bases has KubeRay's own CRDs (what the test environment's
// stand-in chart installs).
var KubeRay = Product{
	Name:      "KubeRay",
	Module:    "github.com/ray-project/kuberay/ray-operator",
	ChartRepo: "https://ray-project.github.io/kuberay-helm/", ChartName: "kuberay-operator",
	// 1.5.0, the previous default, is still tested, as the version
	// upgraded from (operator and a live RayCluster).
	DefaultVersion: "1.6.2",
	Release:        "kuberay-operator", Namespace: "kuberay-system",
	Serves: "ray.io/v1",
}

const kubeRayMissing = "the KubeRay CRDs are not installed in this cluster: add aiplatform_kuberay_operator or install KubeRay"

var (
	// RayClusterKind is KubeRay's RayCluster.
	RayClusterKind = kube.Kind{Group: "ray.io", Version: "v1", Resource: "rayclusters", Kind: "RayCluster", Namespaced: true, Missing: kubeRayMissing}
	// RayServiceKind is KubeRay's RayService (Ray Serve on a RayCluster
	// that KubeRay creates, and replaces on upgrade).
	RayServiceKind = kube.Kind{Group: "ray.io", Version: "v1", Resource: "rayservices", Kind: "RayService", Namespaced: true, Missing: kubeRayMissing}
)
