// Package kueue holds the resources for Kueue's API objects, one file each.
package kueue

import "github.com/aiplatform/terraform-provider-aiplatform/internal/kube"

const (
	group = "kueue.x-k8s.io"
	// version is the API version written: Kueue v0.17 stores v1beta2.
	version = "v1beta2"
	missing = "the Kueue CRDs are not installed in this cluster: add aiplatform_kueue or install Kueue"
)

// kind is a Kueue kind written at v1beta2, or at v1beta1 on clusters that
// serve only that (Kueue ≤ 0.12, which many clusters still run).
func kind(resource, kindName string, namespaced bool, convert func(map[string]any, string, bool)) kube.Kind {
	return kube.Kind{Group: group, Version: version, Resource: resource, Kind: kindName, Namespaced: namespaced,
		Missing: missing, Alternates: []string{"v1beta1"}, Convert: convert}
}

var (
	resourceFlavorKind        = kind("resourceflavors", "ResourceFlavor", false, nil)
	workloadPriorityClassKind = kind("workloadpriorityclasses", "WorkloadPriorityClass", false, nil)
	clusterQueueKind          = kind("clusterqueues", "ClusterQueue", false, clusterQueueV1beta1)
	localQueueKind            = kind("localqueues", "LocalQueue", true, nil)
	cohortKind                = kind("cohorts", "Cohort", false, nil)
	// Topology, AdmissionCheck and ProvisioningRequestConfig are served at
	// v1beta1 too, with the same fields.
	topologyKind                  = kind("topologies", "Topology", false, nil)
	admissionCheckKind            = kind("admissionchecks", "AdmissionCheck", false, nil)
	provisioningRequestConfigKind = kind("provisioningrequestconfigs", "ProvisioningRequestConfig", false, nil)
)

// clusterQueueV1beta1 converts the fields of a ClusterQueue that v1beta2
// renamed: spec.cohort became spec.cohortName, the flavor fungibility
// values Borrow and Preempt became MayStopSearch, and spec.admissionChecks
// became rules of spec.admissionChecksStrategy.
func clusterQueueV1beta1(obj map[string]any, _ string, down bool) {
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return
	}
	from, to := "cohortName", "cohort"
	if !down {
		from, to = to, from
	}
	if v, ok := spec[from]; ok {
		spec[to] = v
		delete(spec, from)
	}
	// v1beta1's plain list of check names is v1beta2's strategy without flavors.
	if checks, ok := spec["admissionChecks"].([]any); ok && !down {
		if _, has := spec["admissionChecksStrategy"]; !has && len(checks) > 0 {
			rules := make([]any, len(checks))
			for i, c := range checks {
				rules[i] = map[string]any{"name": c}
			}
			spec["admissionChecksStrategy"] = map[string]any{"admissionChecks": rules}
		}
		delete(spec, "admissionChecks")
	}
	ff, _ := spec["flavorFungibility"].(map[string]any)
	for key, old := range map[string]string{"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"} {
		switch {
		case ff == nil:
		case down && ff[key] == "MayStopSearch":
			ff[key] = old
		case !down && ff[key] == old:
			ff[key] = "MayStopSearch"
		}
	}
}
