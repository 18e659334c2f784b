package catalog

import "github.com/aiplatform/terraform-provider-aiplatform/internal/kube"

// LWS is the LeaderWorkerSet controller (kubernetes-sigs/lws): upstream's OCI
// chart, whose versions are the LWS releases without the "v" (charts/lws of
// the module is the same chart, versioned 0.1.0 there).
var LWS = Product{
	Name:      "LeaderWorkerSet",
	Module:    "sigs.k8s.io/lws",
	ChartRepo: "oci://registry.k8s.io/lws/charts", ChartName: "lws", ChartDir: "charts/lws",
	DefaultVersion: "0.9.0",
	Release:        "lws", Namespace: "lws-system",
	Serves:   "leaderworkerset.x-k8s.io/v1",
	Upgrades: LWSUpgrades,
}

// LWSKind is a LeaderWorkerSet.
var LWSKind = kube.Kind{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets", Kind: "LeaderWorkerSet",
	Namespaced: true, Missing: "the LeaderWorkerSet CRD is not installed in this cluster: install the LWS controller (sigs.k8s.io/lws)"}

// LWSNameLabel is the label LWS's controller puts on every pod of a group
// (leader and workers), whatever the templates say.
const LWSNameLabel = "leaderworkerset.sigs.k8s.io/name"
