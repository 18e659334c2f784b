package catalog

import "github.com/aiplatform/terraform-provider-aiplatform/internal/kube"

// Kueue (kubernetes-sigs/kueue).
const (
	KueueGroup = "kueue.x-k8s.io"
	// KueueAPIVersion is the API version the provider writes: Kueue stores
	// v1beta2 since v0.16 (v0.17 is the oldest the provider installs).
	KueueAPIVersion = "v1beta2"
	// KueueQueueLabel names the LocalQueue a job (Job, JobSet, TrainJob,
	// RayCluster, LeaderWorkerSet, …) is submitted to.
	KueueQueueLabel = "kueue.x-k8s.io/queue-name"
	// KueuePriorityLabel names a job's WorkloadPriorityClass.
	KueuePriorityLabel = "kueue.x-k8s.io/priority-class"

	// The chart: charts/kueue of the module sigs.k8s.io/kueue, published
	// as an OCI chart; its default release and namespace.
	KueueModule         = "sigs.k8s.io/kueue"
	KueueChartDir       = "charts/kueue"
	KueueChartRepo      = "oci://registry.k8s.io/kueue/charts"
	KueueChartName      = "kueue"
	KueueDefaultVersion = "0.19.2" // what aiplatform_kueue installs when version is not set
	KueueRelease        = "kueue"
	KueueNamespace      = "kueue-system"

	kueueMissing = "the Kueue CRDs are not installed in this cluster: add aiplatform_kueue or install Kueue"
)

// Kueue's integrations (integrations.frameworks) the rules refer to.
const (
	// KueueJobIntegration admits batch/v1 Jobs. Kueue v0.17.0's chart
	// registers its Job webhook whatever the integrations, and that
	// webhook refuses every Job while this one is off.
	KueueJobIntegration = "batch/job"
	// KueueTrainJobIntegration admits Kubeflow Trainer's TrainJobs: Kueue
	// reads the queue from the TrainJob's label and holds it suspended
	// (0 pods) until the whole gang is admitted.
	KueueTrainJobIntegration = "trainer.kubeflow.org/trainjob"
)

// kueueKind is a Kueue kind written at v1beta2, or at v1beta1 on clusters
// that serve only that (Kueue ≤ 0.12, which many clusters still run).
func kueueKind(resource, kind string, namespaced bool, convert func(map[string]any, string, bool)) kube.Kind {
	return kube.Kind{Group: KueueGroup, Version: KueueAPIVersion, Resource: resource, Kind: kind, Namespaced: namespaced,
		Missing: kueueMissing, Alternates: []string{"v1beta1"}, Convert: convert}
}

// Kueue's kinds. Topology, AdmissionCheck and ProvisioningRequestConfig
// are served at v1beta1 too, with the same fields; ClusterQueue renamed
// some (ClusterQueueV1beta1).
var (
	KueueResourceFlavor            = kueueKind("resourceflavors", "ResourceFlavor", false, nil)
	KueueWorkloadPriorityClass     = kueueKind("workloadpriorityclasses", "WorkloadPriorityClass", false, nil)
	KueueClusterQueue              = kueueKind("clusterqueues", "ClusterQueue", false, ClusterQueueV1beta1)
	KueueLocalQueue                = kueueKind("localqueues", "LocalQueue", true, nil)
	KueueCohort                    = kueueKind("cohorts", "Cohort", false, nil)
	KueueTopology                  = kueueKind("topologies", "Topology", false, nil)
	KueueAdmissionCheck            = kueueKind("admissionchecks", "AdmissionCheck", false, nil)
	KueueProvisioningRequestConfig = kueueKind("provisioningrequestconfigs", "ProvisioningRequestConfig", false, nil)
	KueueWorkload                  = kueueKind("workloads", "Workload", true, nil)
	// MultiKueueConfig has the same fields at v1beta1, MultiKueueCluster
	// its kubeconfig one level higher (MultiKueueClusterV1beta1).
	KueueMultiKueueConfig  = kueueKind("multikueueconfigs", "MultiKueueConfig", false, nil)
	KueueMultiKueueCluster = kueueKind("multikueueclusters", "MultiKueueCluster", false, MultiKueueClusterV1beta1)
)

// ClusterQueueV1beta1 converts the fields of a ClusterQueue that v1beta2
// renamed (down: v1beta2 → v1beta1): spec.cohort became spec.cohortName,
// the flavor fungibility values Borrow and Preempt became MayStopSearch,
// and spec.admissionChecks became rules of spec.admissionChecksStrategy.
func ClusterQueueV1beta1(obj map[string]any, _ string, down bool) {
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

// MultiKueueClusterV1beta1 converts a MultiKueueCluster between v1beta2's
// spec.clusterSource.kubeConfig and v1beta1's spec.kubeConfig.
func MultiKueueClusterV1beta1(obj map[string]any, _ string, down bool) {
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return
	}
	if down {
		if src, ok := spec["clusterSource"].(map[string]any); ok {
			if kc, ok := src["kubeConfig"]; ok {
				spec["kubeConfig"] = kc
			}
			delete(spec, "clusterSource")
		}
		return
	}
	if kc, ok := spec["kubeConfig"]; ok {
		spec["clusterSource"] = map[string]any{"kubeConfig": kc}
		delete(spec, "kubeConfig")
	}
}
