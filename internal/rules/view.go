package rules

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/planned"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/quantity"
)

// A View is what a rule sees of the cluster to be: the facts planned in this
// run first, the live cluster second. Live reads are made once per view.
type View struct {
	ctx context.Context
	c   *kube.Client
	run *planned.Run

	nodes    []corev1.Node
	nodesErr error
	read     bool
}

func newView(ctx context.Context, c *kube.Client) *View {
	return &View{ctx: ctx, c: c, run: planned.Of(c)}
}

// get reads one live object; a kind the cluster does not serve (its CRDs
// not installed yet) has none.
func (v *View) get(k kube.Kind, ref kube.Ref) (map[string]any, bool, error) {
	obj, found, err := v.c.Get(v.ctx, k, ref)
	if err != nil {
		if served, serr := v.c.Served(v.ctx, k); serr == nil && !served && len(k.Alternates) == 0 {
			return nil, false, nil
		} else if serr == nil && !served {
			// Get tried the alternates already: not served at any.
			return nil, false, nil
		}
		return nil, false, err
	}
	if !found {
		return nil, false, nil
	}
	return obj.Object, true, nil
}

// LocalQueues returns the LocalQueues named name in namespace ns (in every
// namespace when ns is empty): planned ones, and live ones this run does
// not plan.
func (v *View) LocalQueues(ns, name string) ([]planned.LocalQueue, error) {
	var out []planned.LocalQueue
	seen := map[string]bool{}
	for _, q := range planned.All[planned.LocalQueue](v.run) {
		if q.Name == name && (ns == "" || q.Namespace == ns) {
			q.Source = "planned in this run as aiplatform_local_queue"
			out = append(out, q)
			seen[q.FactKey()] = true
		}
	}
	var live []map[string]any
	if ns != "" {
		obj, found, err := v.get(catalog.KueueLocalQueue, kube.Ref{Namespace: ns, Name: name})
		if err != nil {
			return out, err
		}
		if found {
			live = append(live, obj)
		}
	} else {
		list, err := v.c.ObjectsNamed(v.ctx, catalog.KueueLocalQueue, name)
		if err != nil {
			return out, err
		}
		for i := range list {
			live = append(live, list[i].Object)
		}
	}
	for _, obj := range live {
		u := unstructured.Unstructured{Object: obj}
		q := planned.LocalQueue{Namespace: u.GetNamespace(), Name: u.GetName(), Source: "live"}
		q.ClusterQueue, _, _ = unstructured.NestedString(obj, "spec", "clusterQueue")
		if !seen[q.FactKey()] {
			out = append(out, q)
		}
	}
	return out, nil
}

// ClusterQueue returns the ClusterQueue named name, planned or live.
func (v *View) ClusterQueue(name string) (planned.ClusterQueue, bool, error) {
	if q, ok := planned.Lookup[planned.ClusterQueue](v.run, name); ok {
		q.Source = "planned in this run as aiplatform_cluster_queue"
		return q, true, nil
	}
	obj, found, err := v.get(catalog.KueueClusterQueue, kube.Ref{Name: name})
	if err != nil || !found {
		return planned.ClusterQueue{}, false, err
	}
	return liveClusterQueue(obj), true, nil
}

// liveClusterQueue reads a live ClusterQueue's quota.
func liveClusterQueue(obj map[string]any) planned.ClusterQueue {
	u := unstructured.Unstructured{Object: obj}
	q := planned.ClusterQueue{Name: u.GetName(), Source: "live", QuotaKnown: true}
	spec, _, _ := unstructured.NestedMap(obj, "spec")
	q.Cohort = spec["cohortName"] != nil || spec["cohort"] != nil
	ff, _, _ := unstructured.NestedStringMap(obj, "spec", "flavorFungibility")
	q.Fungible = ff["whenCanBorrow"] == "TryNextFlavor" || ff["whenCanPreempt"] == "TryNextFlavor"
	groups, _, _ := unstructured.NestedSlice(obj, "spec", "resourceGroups")
	for _, g := range groups {
		flavors, _, _ := unstructured.NestedSlice(asMap(g), "flavors")
		for _, f := range flavors {
			fm := asMap(f)
			resources, _, _ := unstructured.NestedSlice(fm, "resources")
			for _, r := range resources {
				rm := asMap(r)
				quota := planned.Quota{Flavor: fmt.Sprint(fm["name"]), Resource: fmt.Sprint(rm["name"]), Nominal: amount(rm["nominalQuota"])}
				switch {
				case rm["borrowingLimit"] != nil:
					quota.Borrowing = amount(rm["borrowingLimit"])
				case q.Cohort:
					quota.Borrowing = -1
				}
				q.Quota = append(q.Quota, quota)
			}
		}
	}
	return q
}

// Flavor returns the ResourceFlavor named name, planned or live.
func (v *View) Flavor(name string) (planned.ResourceFlavor, bool, error) {
	if f, ok := planned.Lookup[planned.ResourceFlavor](v.run, name); ok {
		f.Source = "planned in this run as aiplatform_resource_flavor"
		return f, true, nil
	}
	obj, found, err := v.get(catalog.KueueResourceFlavor, kube.Ref{Name: name})
	if err != nil || !found {
		return planned.ResourceFlavor{}, false, err
	}
	labels, _, _ := unstructured.NestedStringMap(obj, "spec", "nodeLabels")
	return planned.ResourceFlavor{Name: name, NodeLabels: labels, LabelsKnown: true, Source: "live"}, true, nil
}

// Nodes returns the cluster's nodes as they will be labelled once this
// run's node pools are applied: each planned aiplatform_gpu_node_pool's
// labels added to the nodes its selector picks.
func (v *View) Nodes() ([]corev1.Node, error) {
	if !v.read {
		v.read = true
		live, err := v.c.Nodes(v.ctx)
		if err != nil {
			v.nodesErr = err
		} else if pools := planned.All[planned.NodePool](v.run); len(pools) == 0 {
			v.nodes = live // nothing to relabel: the client's listing, not a copy
		} else {
			v.nodes = make([]corev1.Node, len(live))
			for i, n := range live {
				v.nodes[i] = n
				for _, p := range pools {
					if cur := v.nodes[i].Labels; capacity.Matches(n.Labels, p.Selector) && !capacity.Matches(cur, p.Labels) {
						labels := maps.Clone(cur)
						if labels == nil {
							labels = map[string]string{}
						}
						maps.Copy(labels, p.Labels)
						v.nodes[i].Labels = labels
					}
				}
			}
		}
	}
	return v.nodes, v.nodesErr
}

// PoolsLabelling returns the planned node pools that give nodes a label of
// selector: the resources a check of nodes by selector depends on.
func (v *View) PoolsLabelling(selector map[string]string) []planned.NodePool {
	var out []planned.NodePool
	for _, p := range planned.All[planned.NodePool](v.run) {
		for k, val := range selector {
			if p.Labels[k] == val {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// NodesMatching returns the nodes (as planned: Nodes) that match selector,
// sorted by name, with the planned pools that label them.
func (v *View) NodesMatching(selector map[string]string) ([]*corev1.Node, []planned.NodePool, error) {
	nodes, err := v.Nodes()
	if err != nil {
		return nil, nil, err
	}
	return capacity.Select(nodes, selector), v.PoolsLabelling(selector), nil
}

// Kueue returns the Kueue installs planned in this run or, when none is,
// those found live; from says which ("planned" or how the live one was found).
func (v *View) Kueue() ([]helm.Install, error) {
	var out []helm.Install
	for _, in := range planned.All[helm.Install](v.run) {
		if in.Chart == helm.Kueue.Product {
			out = append(out, in)
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	return helm.LiveKueue(v.ctx, v.c)
}

// ServingGroup returns the serving group kind ns/name: planned, else live
// (its pod template's labels); found is false when neither is there.
func (v *View) ServingGroup(kind, ns, name string) (planned.ServingGroup, bool, error) {
	if g, ok := planned.Lookup[planned.ServingGroup](v.run, planned.ServingGroup{Kind: kind, Namespace: ns, Name: name}.FactKey()); ok {
		g.Source = describe(g) + " (planned pod labels)"
		return g, true, nil
	}
	k, tmpl := catalog.Deployment, []string{"spec", "template", "metadata", "labels"}
	if kind == catalog.LWSKind.Kind {
		k, tmpl = catalog.LWSKind, []string{"spec", "leaderWorkerTemplate", "workerTemplate", "metadata", "labels"}
	}
	obj, found, err := v.get(k, kube.Ref{Namespace: ns, Name: name})
	if err != nil || !found {
		return planned.ServingGroup{}, false, err
	}
	labels, _, _ := unstructured.NestedStringMap(obj, tmpl...)
	if labels == nil {
		labels = map[string]string{}
	}
	if kind == catalog.LWSKind.Kind {
		labels[catalog.LWSNameLabel] = name
	}
	return planned.ServingGroup{Kind: kind, Namespace: ns, Name: name, PodLabels: labels, Source: "live " + kind + " pod template"}, true, nil
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// amount reads a quantity as a whole number (GPUs).
func amount(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	case string:
		if q, err := quantity.Parse(x); err == nil {
			return q.Value()
		}
	}
	return 0
}

// NodesMatching returns the nodes that match selector as this run plans
// them (each planned aiplatform_gpu_node_pool's labels on the nodes it
// picks), for the checks of a single resource against the nodes it
// selects: a selector naming a pool's labels matches the pool's nodes on
// the first apply too, when the pool is planned first.
func NodesMatching(ctx context.Context, c *kube.Client, selector map[string]string) ([]*corev1.Node, error) {
	if len(planned.All[planned.NodePool](planned.Of(c))) == 0 {
		return c.NodesMatching(ctx, selector) // no pool planned: the client's per-selector cache
	}
	nodes, _, err := newView(ctx, c).NodesMatching(selector)
	return nodes, err
}
