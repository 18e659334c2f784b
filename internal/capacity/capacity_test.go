package capacity

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const gpu = corev1.ResourceName(DefaultGPUResource)

func node(name, product string, gpus int64, ready, cordoned bool, labels ...string) corev1.Node {
	l := map[string]string{GPUProductLabel: product}
	for i := 0; i+1 < len(labels); i += 2 {
		l[labels[i]] = labels[i+1]
	}
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	res := corev1.ResourceList{
		gpu:                   *resource.NewQuantity(gpus, resource.DecimalSI),
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
	}
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l},
		Spec:       corev1.NodeSpec{Unschedulable: cordoned},
		Status: corev1.NodeStatus{
			Capacity: res, Allocatable: res,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}},
		},
	}
}

func pod(nodeName string, gpus int64, phase corev1.PodPhase) corev1.Pod {
	return corev1.Pod{
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{gpu: *resource.NewQuantity(gpus, resource.DecimalSI)}},
		}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

func TestDerivedQuota(t *testing.T) {
	cases := []struct {
		total   string
		share   float64
		reserve string
		want    string
	}{
		{"32", 1, "0", "32"},
		{"32", 0.5, "0", "16"},
		{"24", 1.0 / 3, "0", "8"},
		{"10", 0.33, "0", "3"}, // floor(3.3)
		{"32", 1, "4", "28"},
		{"8", 0.5, "6", "0"}, // never below zero
		{"512Gi", 0.5, "0", "256Gi"},
		{"512Gi", 1, "16Gi", "496Gi"},
		{"96", 0.25, "500m", "23"}, // a fractional reserve takes a whole unit
		{"0", 1, "0", "0"},
		{"12000", 0.5, "0", "6000"}, // plain, not Kubernetes' canonical "6k"
	}
	for _, c := range cases {
		got := DerivedQuota(resource.MustParse(c.total), c.share, resource.MustParse(c.reserve))
		if Format(got) != c.want {
			t.Errorf("DerivedQuota(%s, %v, %s) = %s, want %s", c.total, c.share, c.reserve, Format(got), c.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	nodes := []corev1.Node{
		node("h100-1", "H100", 8, true, false, "pool", "h100"),
		node("h100-0", "H100", 8, true, false, "pool", "h100"),
		node("h100-2", "H100", 8, false, false, "pool", "h100"), // NotReady: listed, not counted
		node("h100-3", "H100", 8, true, true, "pool", "h100"),   // cordoned: listed, not counted
		node("a100-0", "A100", 4, true, false, "pool", "a100"),
	}
	p := Summarize(nodes, map[string]string{"pool": "h100"}, gpu)
	if fmt.Sprint(p.NodeNames) != "[h100-0 h100-1 h100-2 h100-3]" {
		t.Errorf("names %v", p.NodeNames)
	}
	if p.Product != "H100" || p.GPUsPerNode != 8 || p.GPUCapacity != 32 || p.GPUAllocatable != 16 {
		t.Errorf("pool %+v", p)
	}
	if p.CPUAllocatable.String() != "64" || p.MemoryAllocatable.String() != "512Gi" {
		t.Errorf("cpu %s memory %s", p.CPUAllocatable.String(), p.MemoryAllocatable.String())
	}
	if all := Summarize(nodes, nil, gpu); all.Product != Mixed || all.GPUsPerNode != 4 || all.GPUAllocatable != 20 {
		t.Errorf("mixed pool %+v", all)
	}
	if none := Summarize(nodes, map[string]string{"pool": "none"}, gpu); len(none.NodeNames) != 0 || none.GPUAllocatable != 0 || none.Product != "" {
		t.Errorf("empty pool %+v", none)
	}
}

// The fragmentation case: eight 1-GPU jobs, one per 8-GPU node, leave 56 free
// GPUs and no node that can take an 8-GPU job.
func TestGPUUsageFragmentation(t *testing.T) {
	var nodes []corev1.Node
	var pods []corev1.Pod
	for i := 0; i < 8; i++ {
		name := fmt.Sprintf("n%d", i)
		nodes = append(nodes, node(name, "H100", 8, true, false))
		pods = append(pods, pod(name, 1, corev1.PodRunning))
	}
	pods = append(pods, pod("n0", 7, corev1.PodSucceeded), pod("", 8, corev1.PodPending)) // finished; unbound
	u := GPUUsage(nodes, pods, nil, gpu)
	if u.AllocatableTotal != 64 || u.RequestedTotal != 8 || u.FreeTotal != 56 || u.LargestFreeBlock != 7 || u.WholeFreeNodes != 0 {
		t.Errorf("usage %+v", u)
	}
	nodes = append(nodes, node("n8", "H100", 8, true, false), node("n9", "H100", 8, false, false))
	u = GPUUsage(nodes, pods, nil, gpu)
	if u.LargestFreeBlock != 8 || u.WholeFreeNodes != 1 || len(u.Nodes) != 10 || u.FreeTotal != 64 {
		t.Errorf("usage with a free node and a NotReady one %+v", u)
	}
}

func TestPodRequest(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	q := func(n int64) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{gpu: *resource.NewQuantity(n, resource.DecimalSI)}}
	}
	p := corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Resources: q(4)}, {Resources: q(1), RestartPolicy: &always}},
		Containers:     []corev1.Container{{Resources: q(1)}, {Resources: q(1)}},
	}}
	if got := PodRequest(&p, gpu); got != 4 { // init 4 > 2 containers + 1 sidecar
		t.Errorf("PodRequest = %d, want 4", got)
	}
	p.Spec.InitContainers[0].Resources = q(1)
	if got := PodRequest(&p, gpu); got != 3 {
		t.Errorf("PodRequest = %d, want 3", got)
	}
}
