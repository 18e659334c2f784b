package training

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// MPIJobKind is the MPI Operator's MPIJob (v0.8.0 serves kubeflow.org/v2beta1).
var MPIJobKind = catalog.MPIJobKind

// Labels the MPI Operator puts on an MPIJob's pods (its v2beta1 constants).
const (
	JobNameLabel = "training.kubeflow.org/job-name"
	JobRoleLabel = "training.kubeflow.org/job-role"
)

// Labels and names of the check's objects.
const (
	checkLabel        = "aiplatform.terraform.io/nccl-check"
	managedByLabel    = "app.kubernetes.io/managed-by"
	queueLabel        = catalog.KueueQueueLabel
	launcherContainer = "launcher"
	workerContainer   = "worker"
	launcherRole      = "launcher"
)

// LauncherSelector selects the launcher pod of the MPIJob named name.
func LauncherSelector(name string) string {
	return JobNameLabel + "=" + name + "," + JobRoleLabel + "=" + launcherRole
}

// PodSelector selects every pod of the MPIJob named name.
func PodSelector(name string) string { return JobNameLabel + "=" + name }

func toMap(v any) map[string]any {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(v)
	if err != nil {
		panic(fmt.Sprintf("converting %T: %v", v, err)) // typed Kubernetes objects always convert
	}
	return m
}

// mpiJob renders the check's MPIJob: one launcher that runs the command and
// prints nccl-tests' table, one worker per node of s.NodeNames (pinned by
// name, one per node), nothing restarted (restartPolicy Never, backoffLimit
// 0), every pod removed when the job ends (cleanPodPolicy All), and the
// launcher created only once every worker is Ready, so mpirun finds them.
func mpiJob(s *spec) *unstructured.Unstructured {
	labels := map[string]string{managedByLabel: kube.FieldManager, checkLabel: s.Ref.Name}
	meta := map[string]any{"labels": toAnyMap(labels)}
	if s.Queue != "" {
		meta["labels"].(map[string]any)[queueLabel] = s.Queue
	}
	podLabels := map[string]string{checkLabel: s.Ref.Name}

	launcher := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: launcherContainer, Image: s.Image, Command: s.Command,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
			}},
		},
	}

	gpus := *resource.NewQuantity(s.GPUsPerNode, resource.DecimalSI)
	limits := corev1.ResourceList{s.GPUResource: gpus}
	names := make([]string, 0, len(s.RDMA))
	for k := range s.RDMA {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		limits[corev1.ResourceName(k)] = *resource.NewQuantity(s.RDMA[k], resource.DecimalSI)
	}
	worker := corev1.Container{Name: workerContainer, Image: s.Image, Command: s.WorkerCommand,
		Resources: corev1.ResourceRequirements{Limits: limits}}
	if len(s.RDMA) > 0 {
		worker.SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"IPC_LOCK"}}}
	}
	workerSpec := corev1.PodSpec{
		Containers:   []corev1.Container{worker},
		NodeSelector: s.Selector,
		Tolerations:  s.Tolerations,
		HostNetwork:  s.HostNetwork,
		Affinity: &corev1.Affinity{
			NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: nodeNameTerms(s.NodeNames)}},
			PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{JobNameLabel: s.Ref.Name, JobRoleLabel: "worker"}},
				TopologyKey:   corev1.LabelHostname,
			}}},
		},
	}
	if s.HostNetwork {
		workerSpec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	workerTemplate := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: podLabels}, Spec: workerSpec}

	spec := map[string]any{
		"slotsPerWorker":         s.GPUsPerNode,
		"mpiImplementation":      "OpenMPI",
		"launcherCreationPolicy": "WaitForWorkersReady",
		"runPolicy": map[string]any{
			"cleanPodPolicy":        "All",
			"backoffLimit":          int64(0),
			"activeDeadlineSeconds": int64(s.Timeout.Seconds()),
		},
		"mpiReplicaSpecs": map[string]any{
			"Launcher": map[string]any{"replicas": int64(1), "restartPolicy": "Never", "template": toMap(&launcher)},
			"Worker":   map[string]any{"replicas": int64(len(s.NodeNames)), "restartPolicy": "Never", "template": toMap(&workerTemplate)},
		},
	}
	return kube.NewObject(MPIJobKind, s.Ref, map[string]any{"metadata": meta, "spec": spec})
}

func toAnyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// nodeNameTerms are node selector terms (ORed) for the named nodes, one per
// node: the API server refuses a node field selector with more than one value
// ("must be only one value when operator is In or NotIn for node field
// selector"), so one term listing every node creates no worker pod.
func nodeNameTerms(names []string) []corev1.NodeSelectorTerm {
	terms := make([]corev1.NodeSelectorTerm, len(names))
	for i, n := range names {
		terms[i] = corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n}}}}
	}
	return terms
}
