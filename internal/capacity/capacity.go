// Package capacity is the platform's arithmetic: what the nodes of a pool can
// give, the quota derived from it, and where free GPUs are. Pure functions over
// API objects already read; no I/O.
package capacity

import (
	"math"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// DefaultGPUResource is the extended resource NVIDIA's device plugin advertises.
const DefaultGPUResource = "nvidia.com/gpu"

// GPUProductLabel is set by NVIDIA's GPU feature discovery.
const GPUProductLabel = "nvidia.com/gpu.product"

// Mixed is the product of a pool whose nodes carry different GPU products.
const Mixed = "mixed"

// Matches reports whether labels carry every key/value of selector. An empty
// selector matches every node.
func Matches(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Ready reports the node's Ready condition.
func Ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Schedulable reports whether new pods may land on the node: not cordoned.
// Taints are not counted against it: GPU pools are commonly tainted and
// their workloads tolerate it.
func Schedulable(n *corev1.Node) bool { return !n.Spec.Unschedulable }

// Select returns the nodes matching selector, sorted by name.
func Select(nodes []corev1.Node, selector map[string]string) []*corev1.Node {
	var out []*corev1.Node
	for i := range nodes {
		if Matches(nodes[i].Labels, selector) {
			out = append(out, &nodes[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Allocatable sums a resource's allocatable over the Ready, schedulable nodes
// among nodes: what the scheduler can really place.
func Allocatable(nodes []*corev1.Node, name corev1.ResourceName) resource.Quantity {
	sum := resource.Quantity{}
	for _, n := range nodes {
		if !Ready(n) || !Schedulable(n) {
			continue
		}
		if q, ok := n.Status.Allocatable[name]; ok {
			sum.Add(q)
		}
	}
	if f := formatOf(nodes, name); f != "" {
		sum = *resource.NewQuantity(sum.Value(), f)
	}
	return sum
}

// formatOf is the format the nodes report a resource in (so memory sums print
// as "512Gi", not bytes).
func formatOf(nodes []*corev1.Node, name corev1.ResourceName) resource.Format {
	for _, n := range nodes {
		if q, ok := n.Status.Allocatable[name]; ok {
			return q.Format
		}
	}
	return ""
}

// DerivedQuota is floor(share × total) − reserve in whole units of the
// resource (GPUs, cores, bytes), never below zero. share is in (0, 1].
func DerivedQuota(total resource.Quantity, share float64, reserve resource.Quantity) resource.Quantity {
	format := total.Format
	if format == "" {
		format = resource.DecimalSI
	}
	// float64 is exact up to 2^53 units: 8 PiB of memory, far past any pool.
	v := int64(math.Floor(float64(total.Value()) * share))
	v -= reserve.Value() // Value rounds up: a fractional reserve takes a whole unit
	if v < 0 {
		v = 0
	}
	return *resource.NewQuantity(v, format)
}

// Format prints a quota the way people write it: whole decimal numbers as
// plain integers ("6000", where Kubernetes' canonical form says "6k"), binary
// sizes with their suffix ("512Gi").
func Format(q resource.Quantity) string {
	if q.Format == resource.DecimalSI {
		if v, ok := q.AsInt64(); ok {
			return strconv.FormatInt(v, 10)
		}
	}
	return q.String()
}

// Pool is what a set of nodes offers.
type Pool struct {
	NodeNames         []string
	Product           string // GPU product; Mixed when nodes differ; "" without GPUs
	GPUsPerNode       int64  // allocatable GPUs of the smallest node
	GPUCapacity       int64
	GPUAllocatable    int64 // of Ready, schedulable nodes
	CPUAllocatable    resource.Quantity
	MemoryAllocatable resource.Quantity
}

// Summarize describes the nodes that match selector.
func Summarize(nodes []corev1.Node, selector map[string]string, gpu corev1.ResourceName) Pool {
	sel := Select(nodes, selector)
	p := Pool{NodeNames: make([]string, 0, len(sel))}
	for i, n := range sel {
		p.NodeNames = append(p.NodeNames, n.Name)
		product := n.Labels[GPUProductLabel]
		switch {
		case i == 0:
			p.Product = product
		case p.Product != product:
			p.Product = Mixed
		}
		c := n.Status.Capacity[gpu]
		p.GPUCapacity += c.Value()
		a := n.Status.Allocatable[gpu]
		if i == 0 || a.Value() < p.GPUsPerNode {
			p.GPUsPerNode = a.Value()
		}
	}
	g := Allocatable(sel, gpu)
	p.GPUAllocatable = g.Value()
	p.CPUAllocatable = Allocatable(sel, corev1.ResourceCPU)
	p.MemoryAllocatable = Allocatable(sel, corev1.ResourceMemory)
	return p
}
