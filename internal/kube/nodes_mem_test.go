package kube

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// encodedPool returns n kwok-shaped GPU nodes (as the bench creates them) in
// the protobuf encoding a LIST response carries.
func encodedPool(tb testing.TB, n int) [][]byte {
	ser := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	out := make([][]byte, n)
	for i := range out {
		list := corev1.ResourceList{"cpu": resource.MustParse("96"), "memory": resource.MustParse("1024Gi"),
			"pods": resource.MustParse("110"), "nvidia.com/gpu": *resource.NewQuantity(int64(4+4*(i%2)), resource.DecimalSI)}
		name := fmt.Sprintf("bench-%05d", i)
		node := &corev1.Node{
			TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
				Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
					"pool": fmt.Sprint("p", i%20), "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
			Status: corev1.NodeStatus{Capacity: list, Allocatable: list.DeepCopy(),
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}, {Type: "MemoryPressure", Status: "False"}}},
		}
		var b bytes.Buffer
		if err := ser.Encode(node, &b); err != nil {
			tb.Fatal(err)
		}
		out[i] = b.Bytes()
	}
	return out
}

// BenchmarkNodesRetained reports the live heap that a listing of 5,000 nodes
// keeps for the rest of the provider run: slimmed only, and slimmed with
// equal resource lists shared (what Nodes does).
func BenchmarkNodesRetained(b *testing.B) {
	raw := encodedPool(b, 5000)
	ser := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	for _, shared := range []bool{false, true} {
		b.Run(fmt.Sprintf("shared=%v", shared), func(b *testing.B) {
			var live uint64
			for range b.N {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				lists := resourceLists{}
				out := make([]corev1.Node, 0, len(raw))
				for _, data := range raw {
					obj, _, err := ser.Decode(data, nil, nil)
					if err != nil {
						b.Fatal(err)
					}
					if shared {
						out = append(out, lists.node(obj.(*corev1.Node)))
					} else {
						out = append(out, slimNode(obj.(*corev1.Node)))
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				live += after.HeapAlloc - before.HeapAlloc
				runtime.KeepAlive(out)
			}
			b.ReportMetric(float64(live)/float64(b.N)/float64(len(raw)), "live-B/node")
		})
	}
}

func TestResourceListsShareOnlyEqualLists(t *testing.T) {
	r := resourceLists{}
	a := r.share(corev1.ResourceList{"cpu": resource.MustParse("96"), "nvidia.com/gpu": resource.MustParse("8")})
	b := r.share(corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8"), "cpu": resource.MustParse("96")})
	c := r.share(corev1.ResourceList{"cpu": resource.MustParse("96"), "nvidia.com/gpu": resource.MustParse("4")})
	if fmt.Sprintf("%p", a) != fmt.Sprintf("%p", b) {
		t.Error("equal lists are not shared")
	}
	if fmt.Sprintf("%p", a) == fmt.Sprintf("%p", c) {
		t.Error("lists with different GPU counts share one map")
	}
	if g := c[corev1.ResourceName("nvidia.com/gpu")]; g.Value() != 4 {
		t.Errorf("shared list lost its value: %v", c)
	}
	if r.share(nil) != nil {
		t.Error("a missing list became a map")
	}
}
