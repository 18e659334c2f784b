package capacity

import (
	corev1 "k8s.io/api/core/v1"
)

// NodeUsage is one node's GPUs.
type NodeUsage struct {
	Name        string
	Product     string
	Allocatable int64
	Requested   int64 // by non-terminated pods bound to the node
	Free        int64 // allocatable − requested, never below 0
	Ready       bool
	Schedulable bool
}

// Usage is the GPUs of a set of nodes. Totals count only Ready, schedulable
// nodes: what new work can really get.
type Usage struct {
	Nodes            []NodeUsage
	AllocatableTotal int64
	RequestedTotal   int64
	FreeTotal        int64
	// LargestFreeBlock is the most free GPUs on one node: the largest
	// single-node job that fits now. Eight 1-GPU jobs spread over eight 8-GPU
	// nodes leave 56 free GPUs but no block of 8.
	LargestFreeBlock int64
	// WholeFreeNodes have every GPU free.
	WholeFreeNodes int64
}

// GPUUsage computes per-node and total GPU usage of the nodes matching selector.
func GPUUsage(nodes []corev1.Node, pods []corev1.Pod, selector map[string]string, gpu corev1.ResourceName) Usage {
	requested := map[string]int64{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		requested[p.Spec.NodeName] += PodRequest(p, gpu)
	}
	var u Usage
	for _, n := range Select(nodes, selector) {
		a := n.Status.Allocatable[gpu]
		nu := NodeUsage{
			Name:        n.Name,
			Product:     n.Labels[GPUProductLabel],
			Allocatable: a.Value(),
			Requested:   requested[n.Name],
			Ready:       Ready(n),
			Schedulable: Schedulable(n),
		}
		nu.Free = max(nu.Allocatable-nu.Requested, 0)
		u.Nodes = append(u.Nodes, nu)
		if !nu.Ready || !nu.Schedulable {
			continue
		}
		u.AllocatableTotal += nu.Allocatable
		u.RequestedTotal += nu.Requested
		u.FreeTotal += nu.Free
		u.LargestFreeBlock = max(u.LargestFreeBlock, nu.Free)
		if nu.Allocatable > 0 && nu.Requested == 0 {
			u.WholeFreeNodes++
		}
	}
	return u
}

// PodRequest is what the scheduler reserves of a resource for a pod: the sum
// over its containers and restartable (sidecar) init containers, or the
// largest plain init container if that is more, plus pod overhead.
func PodRequest(p *corev1.Pod, name corev1.ResourceName) int64 {
	var sum, sidecars, initMax int64
	for _, c := range p.Spec.Containers {
		q := c.Resources.Requests[name]
		sum += q.Value()
	}
	for _, c := range p.Spec.InitContainers {
		q := c.Resources.Requests[name]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars += q.Value()
			continue
		}
		// A plain init container runs beside the sidecars started before it.
		initMax = max(initMax, q.Value()+sidecars)
	}
	total := max(sum+sidecars, initMax)
	if q, ok := p.Spec.Overhead[name]; ok {
		total += q.Value()
	}
	return total
}
