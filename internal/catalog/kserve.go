package catalog

import "github.com/aiplatform/terraform-provider-aiplatform/internal/kube"

// KServe's resources chart (the controller manager, its RBAC, webhooks and
// the inferenceservice-config ConfigMap). Upstream publishes it as
// oci://ghcr.io/kserve/charts/kserve-resources, versions with the "v"; the
// module holds the same charts under charts/. Its CRDs (and the
// LLMInferenceService's) are charts of their own, installed beside it.
var KServe = Product{
	Name:      "KServe",
	Module:    "github.com/kserve/kserve",
	ChartRepo: "oci://ghcr.io/kserve/charts", ChartName: "kserve-resources", ChartDir: "charts/kserve-resources",
	DefaultVersion: "v0.20.0",
	Release:        "kserve", Namespace: "kserve",
	Serves: KServeGroup + "/v1beta1",
}

const (
	KServeGroup   = "serving.kserve.io"
	kserveMissing = "the KServe CRDs are not installed in this cluster: add aiplatform_kserve or install KServe v0.20"
)

var (
	// InferenceServiceKind is what KServe users submit.
	InferenceServiceKind = kube.Kind{Group: KServeGroup, Version: "v1beta1", Resource: "inferenceservices", Kind: "InferenceService", Namespaced: true, Missing: kserveMissing}
	// ClusterServingRuntimeKind is KServe's cluster-scoped runtime.
	ClusterServingRuntimeKind = kube.Kind{Group: KServeGroup, Version: "v1alpha1", Resource: "clusterservingruntimes",
		Kind: "ClusterServingRuntime", Missing: kserveMissing}
	// ServingRuntimeKind is KServe's namespaced runtime.
	ServingRuntimeKind = kube.Kind{Group: KServeGroup, Version: "v1alpha1", Resource: "servingruntimes",
		Kind: "ServingRuntime", Namespaced: true, Missing: kserveMissing}
	// LLMServiceConfigKind is KServe's LLMInferenceServiceConfig (v1alpha2,
	// the storage version, so that no conversion webhook is needed to write it).
	LLMServiceConfigKind = kube.Kind{Group: KServeGroup, Version: "v1alpha2", Resource: "llminferenceserviceconfigs",
		Kind: "LLMInferenceServiceConfig", Namespaced: true, Missing: kserveMissing}
)
