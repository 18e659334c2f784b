package planned

import "fmt"

// The facts of the object resources, one type per kind of plan. A rule's
// View also returns live objects as facts; Source then says where a fact
// was read, for a diagnostic: "live", or "planned in this run as
// aiplatform_cluster_queue" (the View fills it in; resources leave it empty).

// ClusterQueue is a planned (or live) Kueue ClusterQueue's quota.
type ClusterQueue struct {
	Name   string
	Source string
	// Cohort: the queue is in a cohort, so it may borrow without a limit
	// where a flavor has no borrowing limit.
	Cohort bool
	// Fungible: the queue tries its next flavor when it could borrow or
	// preempt in one (flavorFungibility TryNextFlavor).
	Fungible bool
	// Quota lists every flavor's quota of every resource, in the queue's
	// order; QuotaKnown is false while a quota is unknown until apply.
	Quota      []Quota
	QuotaKnown bool
}

// Quota is one flavor's quota of one resource.
type Quota struct {
	Flavor, Resource string
	Nominal          int64
	// Borrowing is the borrowing limit: 0 none, -1 unbounded (a cohort
	// without a borrowing limit).
	Borrowing int64
}

func (q ClusterQueue) FactKey() string { return q.Name }

// Flavors returns the quotas of one resource, flavor by flavor.
func (q ClusterQueue) Flavors(resource string) []Quota {
	var out []Quota
	for _, f := range q.Quota {
		if f.Resource == resource {
			out = append(out, f)
		}
	}
	return out
}

// LocalQueue is a planned (or live) LocalQueue.
type LocalQueue struct {
	Namespace, Name, ClusterQueue string
	Source                        string
}

func (q LocalQueue) FactKey() string { return q.Namespace + "/" + q.Name }

// ResourceFlavor is a planned (or live) ResourceFlavor's node labels.
type ResourceFlavor struct {
	Name       string
	NodeLabels map[string]string
	// LabelsKnown is false while node_labels is unknown until apply.
	LabelsKnown bool
	Source      string
}

func (f ResourceFlavor) FactKey() string { return f.Name }

// NodePool is a planned aiplatform_gpu_node_pool: after its apply every
// node its selector picks carries Labels.
type NodePool struct {
	Name     string
	Selector map[string]string
	Labels   map[string]string
}

func (p NodePool) FactKey() string { return p.Name }

// TrainingRuntime is a planned aiplatform_training_runtime: what one
// TrainJob of it asks for.
type TrainingRuntime struct {
	Kind, Namespace, Name string // Kind: TrainingRuntime or ClusterTrainingRuntime
	// Queue is gang.kueue_queue, the LocalQueue that admits the gang ("" none).
	Queue       string
	Nodes       int64
	GPUsPerNode int64
	GPUResource string
	// NodeSelector is the runtime's own node_selector; SelectorKnown is
	// false while it is unknown until apply.
	NodeSelector  map[string]string
	SelectorKnown bool
}

func (r TrainingRuntime) FactKey() string { return r.Kind + " " + r.Namespace + "/" + r.Name }

// Namespaced reports whether it is a namespaced TrainingRuntime.
func (r TrainingRuntime) Namespaced() bool { return r.Kind == "TrainingRuntime" }

// String names the runtime in a diagnostic.
func (r TrainingRuntime) String() string {
	if r.Namespaced() {
		return fmt.Sprintf("aiplatform_training_runtime %q", r.Namespace+"/"+r.Name)
	}
	return fmt.Sprintf("aiplatform_training_runtime %q", r.Name)
}

// GangGPUs is the GPUs one TrainJob takes at once.
func (r TrainingRuntime) GangGPUs() int64 { return r.Nodes * r.GPUsPerNode }

// ServingGroup is a planned serving group (a Deployment of
// aiplatform_model_deployment, a LeaderWorkerSet of aiplatform_lws_group):
// the labels every pod of it carries.
type ServingGroup struct {
	Kind, Namespace, Name string // Kind: Deployment or LeaderWorkerSet
	PodLabels             map[string]string
	Source                string
}

func (g ServingGroup) FactKey() string { return g.Kind + " " + g.Namespace + "/" + g.Name }

// InferencePool is a planned aiplatform_inference_pool: its selector and
// the serving group it names.
type InferencePool struct {
	Namespace, Name      string
	GroupKind, GroupName string // "" when serving_group is not set
	// GroupLabels are serving_group.labels: the group's pod labels as the
	// configuration states them, for a group neither planned nor live.
	GroupLabels map[string]string
	Selector    map[string]string
}

func (p InferencePool) FactKey() string { return p.Namespace + "/" + p.Name }

// MultiKueueCluster is a planned aiplatform_multikueue_cluster: a worker a
// MultiKueueConfig may name.
type MultiKueueCluster struct {
	Name   string
	Source string
}

func (c MultiKueueCluster) FactKey() string { return c.Name }

// MultiKueueConfig is a planned aiplatform_multikueue_config: the workers
// it names, in order (an unknown name is "").
type MultiKueueConfig struct {
	Name     string
	Clusters []string
}

func (c MultiKueueConfig) FactKey() string { return c.Name }
