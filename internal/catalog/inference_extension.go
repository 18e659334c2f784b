package catalog

import "github.com/aiplatform/terraform-provider-aiplatform/internal/kube"

// The Gateway API Inference Extension: the InferencePool CRD and the
// endpoint picker (cmd/lwepp of the module) that routes to a pool's pods.
var InferenceExtension = Product{
	Name:           "Gateway API Inference Extension",
	Module:         "sigs.k8s.io/gateway-api-inference-extension",
	DefaultVersion: "v1.6.0",
	Serves:         "inference.networking.k8s.io/v1",
}

// InferencePoolKind is the extension's InferencePool.
var InferencePoolKind = kube.Kind{Group: "inference.networking.k8s.io", Version: "v1", Resource: "inferencepools", Kind: "InferencePool",
	Namespaced: true, Missing: "the InferencePool CRD (inference.networking.k8s.io/v1) is not installed in this cluster: install the Gateway API Inference Extension's CRDs"}
