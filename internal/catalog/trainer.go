package catalog

import "github.com/aiplatform/terraform-provider-aiplatform/internal/kube"

// Trainer is Kubeflow Trainer v2: upstream's OCI chart, versions without the
// "v"; charts/kubeflow-trainer of the module is the same chart at the same
// version. The published chart bundles its dependencies (JobSet, and LWS for
// the data cache), pulled from their OCI registries; the module's chart has
// none of them in charts/.
var Trainer = Product{
	Name:      "Kubeflow Trainer",
	Module:    "github.com/kubeflow/trainer/v2",
	ChartRepo: "oci://ghcr.io/kubeflow/charts", ChartName: "kubeflow-trainer", ChartDir: "charts/kubeflow-trainer",
	DefaultVersion: "2.3.0",
	Release:        "kubeflow-trainer", Namespace: "kubeflow-system",
	Serves:   TrainerGroup + "/" + trainerVersion,
	Upgrades: TrainerUpgrades,
}

const (
	TrainerGroup   = "trainer.kubeflow.org"
	trainerVersion = "v1alpha1"
	trainerMissing = "the Kubeflow Trainer CRDs are not installed in this cluster: add aiplatform_trainer or install Kubeflow Trainer v2"
)

var (
	// ClusterTrainingRuntimeKind is Trainer's cluster-scoped runtime.
	ClusterTrainingRuntimeKind = kube.Kind{Group: TrainerGroup, Version: trainerVersion, Resource: "clustertrainingruntimes",
		Kind: "ClusterTrainingRuntime", Missing: trainerMissing}
	// TrainingRuntimeKind is Trainer's namespaced runtime.
	TrainingRuntimeKind = kube.Kind{Group: TrainerGroup, Version: trainerVersion, Resource: "trainingruntimes",
		Kind: "TrainingRuntime", Namespaced: true, Missing: trainerMissing}
	// TrainJobKind is what data scientists submit; it names a runtime.
	TrainJobKind = kube.Kind{Group: TrainerGroup, Version: trainerVersion, Resource: "trainjobs",
		Kind: "TrainJob", Namespaced: true, Missing: trainerMissing}
)
