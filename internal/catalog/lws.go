package catalog

import "github.com/aiplatform/terraform-provider-aiplatform/internal/kube"

// LeaderWorkerSet (kubernetes-sigs/lws).
var LWSKind = kube.Kind{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets", Kind: "LeaderWorkerSet",
	Namespaced: true, Missing: "the LeaderWorkerSet CRD is not installed in this cluster: install the LWS controller (sigs.k8s.io/lws)"}

// LWSNameLabel is the label LWS's controller puts on every pod of a group
// (leader and workers), whatever the templates say.
const LWSNameLabel = "leaderworkerset.sigs.k8s.io/name"
