package catalog

import "github.com/aiplatform/terraform-provider-aiplatform/internal/kube"

// Kubernetes' own kinds the rules read.
var Deployment = kube.Kind{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}
