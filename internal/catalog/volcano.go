package catalog

import "github.com/aiplatform/terraform-provider-aiplatform/internal/kube"

// Volcano: upstream's chart repository (no Go module the proxy serves; the
// tests use a stand-in chart with Volcano's CRDs).
var Volcano = Product{
	Name:      "Volcano",
	ChartRepo: "https://volcano-sh.github.io/helm-charts", ChartName: "volcano",
	DefaultVersion: "1.13.0",
	Release:        "volcano", Namespace: "volcano-system",
	Serves: "scheduling.volcano.sh/v1beta1",
}

const volcanoMissing = "the Volcano CRDs are not installed in this cluster: add aiplatform_volcano or install Volcano"

var (
	// VolcanoQueueKind is Volcano's cluster-scoped Queue.
	VolcanoQueueKind = kube.Kind{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "queues", Kind: "Queue", Missing: volcanoMissing}
	// VolcanoPodGroupKind is the gang Volcano schedules.
	VolcanoPodGroupKind = kube.Kind{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups", Kind: "PodGroup", Namespaced: true}
)
