// Package nodes makes the fake nodes of a local cluster: kwok, which plays
// their kubelet (its Stages, pods Running, Succeeded or Failed), node pools
// with GPU labels, and a default StorageClass with a hostPath provisioner.
package nodes

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
)

// NodeAnnotation marks a Node as fake: kwok manages the nodes whose
// annotation NodeAnnotation has the value "fake".
const NodeAnnotation = "kwok.x-k8s.io/node"

// Labels the fake GPU nodes carry, as NVIDIA's GPU feature discovery sets them.
const (
	GPUResource     = "nvidia.com/gpu"
	GPUProductLabel = "nvidia.com/gpu.product"
	GPUCountLabel   = "nvidia.com/gpu.count"
	GPUMemoryLabel  = "nvidia.com/gpu.memory"
)

// Nodes adds and deletes the fake nodes of one cluster.
type Nodes struct {
	Client  kubernetes.Interface
	Timeout time.Duration // bounds each wait
	KwokLog string        // kwok's log, quoted when nodes do not turn Ready; "" when testenv runs no kwok
}

// NodePool describes identical fake nodes, named <Name>-0, <Name>-1, ….
type NodePool struct {
	Name      string            // node name prefix
	Count     int               // number of nodes
	GPUs      int               // nvidia.com/gpu capacity per node (0: a CPU-only node)
	Product   string            // nvidia.com/gpu.product label, e.g. "NVIDIA-H100-80GB-HBM3"
	GPUMemory string            // nvidia.com/gpu.memory label in MiB, e.g. "81559" (optional)
	Labels    map[string]string // extra labels
	CPU       string            // cpu capacity, default "32"
	Memory    string            // memory capacity, default "256Gi"
}

// Add creates pool.Count more nodes of the pool, numbered after the
// highest existing <Name>-<n>, and waits until they are Ready and free of the
// not-ready taint (so pods can be scheduled to them). It returns their names.
// In an external cluster the nodes only turn Ready if kwok runs there.
func (n *Nodes) Add(ctx context.Context, pool NodePool) ([]string, error) {
	if pool.Name == "" || pool.Count < 1 {
		return nil, fmt.Errorf("testenv: node pool needs a name and a count ≥ 1: %+v", pool)
	}
	existing, err := n.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	next := 0
	for _, node := range existing.Items {
		if rest, ok := strings.CutPrefix(node.Name, pool.Name+"-"); ok {
			if i, err := strconv.Atoi(rest); err == nil && i >= next {
				next = i + 1
			}
		}
	}
	var names []string
	for i := range pool.Count {
		node, err := pool.node(fmt.Sprintf("%s-%d", pool.Name, next+i))
		if err != nil {
			return nil, err
		}
		if _, err := n.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("testenv: creating node %s: %w", node.Name, err)
		}
		names = append(names, node.Name)
	}
	return names, n.waitReady(ctx, names)
}

// node builds the Node object. Its status is set at creation (the API server
// keeps a new Node's status); kwok then fills in conditions and addresses.
func (pool NodePool) node(name string) (*corev1.Node, error) {
	cpu, mem := pool.CPU, pool.Memory
	if cpu == "" {
		cpu = "32"
	}
	if mem == "" {
		mem = "256Gi"
	}
	resources := map[string]string{"cpu": cpu, "memory": mem, "pods": "110"}
	labels := map[string]string{
		"type":                   "kwok",
		"kubernetes.io/hostname": name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
	}
	if pool.GPUs > 0 {
		resources[GPUResource] = strconv.Itoa(pool.GPUs)
		labels[GPUCountLabel] = strconv.Itoa(pool.GPUs)
	}
	if pool.Product != "" {
		labels[GPUProductLabel] = pool.Product
	}
	if pool.GPUMemory != "" {
		labels[GPUMemoryLabel] = pool.GPUMemory
	}
	maps.Copy(labels, pool.Labels)

	list := corev1.ResourceList{}
	for k, v := range resources {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("testenv: node pool %s: %s %q: %w", pool.Name, k, v, err)
		}
		list[corev1.ResourceName(k)] = q
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: map[string]string{NodeAnnotation: "fake"},
		},
		Status: corev1.NodeStatus{Capacity: list, Allocatable: list.DeepCopy()},
	}, nil
}

// waitReady waits until every named node is Ready and has neither the
// not-ready nor the unreachable taint.
func (n *Nodes) waitReady(ctx context.Context, names []string) error {
	ctx, cancel := context.WithTimeout(ctx, n.Timeout)
	defer cancel()
	for {
		var pending []string
		for _, name := range names {
			node, err := n.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || !Schedulable(node) {
				pending = append(pending, name)
			}
		}
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("testenv: nodes not Ready after %s: %s", n.Timeout, strings.Join(pending, ", "))
			if n.KwokLog != "" {
				msg += "\n" + process.LogTail(n.KwokLog)
			}
			return fmt.Errorf("%s", msg)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Schedulable reports whether a node is Ready and has neither the not-ready nor
// the unreachable taint.
func Schedulable(n *corev1.Node) bool {
	ready := slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	})
	tainted := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable
	})
	return ready && !tainted
}

// Delete deletes a node and waits until it is gone. Its pods are deleted
// later by the pod garbage collector, as in a real cluster.
func (n *Nodes) Delete(ctx context.Context, name string) error {
	err := n.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil {
		return fmt.Errorf("testenv: deleting node %s: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, n.Timeout)
	defer cancel()
	for {
		_, err := n.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: node %s still exists after %s", name, n.Timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
