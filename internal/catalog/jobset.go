package catalog

import "github.com/aiplatform/terraform-provider-aiplatform/internal/kube"

// JobSet (kubernetes-sigs/jobset): upstream's OCI chart, versions without the
// "v". charts/jobset of the module is the same chart at the same version, but
// its values name the staging image (…/k8s-staging-images/jobset/jobset:main)
// that the release process replaces with registry.k8s.io/jobset/jobset:v<version>.
var JobSet = Product{
	Name:      "JobSet",
	Module:    "sigs.k8s.io/jobset",
	ChartRepo: "oci://registry.k8s.io/jobset/charts", ChartName: "jobset", ChartDir: "charts/jobset",
	DefaultVersion: "0.12.0",
	Release:        "jobset", Namespace: "jobset-system",
	Serves: "jobset.x-k8s.io/v1alpha2",
}

// JobSetKind is a JobSet (what the Trainer runs a TrainJob as).
var JobSetKind = kube.Kind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets", Kind: "JobSet", Namespaced: true}
