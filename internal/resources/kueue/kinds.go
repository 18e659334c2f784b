// Package kueue holds the resources for Kueue's API objects, one file each.
package kueue

import "github.com/aiplatform/terraform-provider-aiplatform/internal/kube"

const (
	group = "kueue.x-k8s.io"
	// version is the API version written: Kueue v0.17 stores v1beta2.
	version = "v1beta2"
	missing = "the Kueue CRDs are not installed in this cluster: add aiplatform_kueue or install Kueue"
)

func kind(resource, kindName string, namespaced bool) kube.Kind {
	return kube.Kind{Group: group, Version: version, Resource: resource, Kind: kindName, Namespaced: namespaced, Missing: missing}
}

var (
	resourceFlavorKind        = kind("resourceflavors", "ResourceFlavor", false)
	workloadPriorityClassKind = kind("workloadpriorityclasses", "WorkloadPriorityClass", false)
	clusterQueueKind          = kind("clusterqueues", "ClusterQueue", false)
	localQueueKind            = kind("localqueues", "LocalQueue", true)
)
