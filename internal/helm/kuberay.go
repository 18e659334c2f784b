package helm

// KubeRay is the KubeRay operator's chart (KubeRay's upstream chart
// repository; the tests use a stand-in chart with KubeRay's own CRDs). Its
// settings are the user's values alone: no typed configuration.
var KubeRay = Chart{
	Product:   "KubeRay",
	Default:   Source{Repository: "https://ray-project.github.io/kuberay-helm/", Name: "kuberay-operator", Version: "1.5.0"},
	Release:   "kuberay-operator",
	Namespace: "kuberay-system",
}
