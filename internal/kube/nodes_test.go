package kube

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSelectorKeyIsCanonicalAndUnambiguous(t *testing.T) {
	a := selectorKey(map[string]string{"pool": "a", "gpu": "h100"})
	b := selectorKey(map[string]string{"gpu": "h100", "pool": "a"})
	if a != b {
		t.Errorf("same selector, different keys: %q vs %q", a, b)
	}
	// "a=b,c" as one value must not collide with two labels a=b and c.
	if x, y := selectorKey(map[string]string{"a": "b,c=d"}), selectorKey(map[string]string{"a": "b", "c": "d"}); x == y {
		t.Errorf("different selectors share key %q", x)
	}
	if selectorKey(nil) != selectorKey(map[string]string{}) {
		t.Error("nil and empty selectors differ")
	}
}

// NodesMatching filters the cached listing once per selector: the second call
// for the same selector returns the very same slice, a different selector its own.
func TestNodesMatchingMemoisesPerSelector(t *testing.T) {
	node := func(name, pool string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": pool}}}
	}
	c := NewClientFromREST(restForTest(), false)
	c.nodes.items, c.nodes.done = []corev1.Node{node("n3", "a"), node("n1", "a"), node("n2", "b")}, true

	ctx := context.Background()
	a1, err := c.NodesMatching(ctx, map[string]string{"pool": "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a1) != 2 || a1[0].Name != "n1" || a1[1].Name != "n3" {
		t.Fatalf("pool=a: got %v, want n1, n3 sorted by name", names(a1))
	}
	a2, _ := c.NodesMatching(ctx, map[string]string{"pool": "a"})
	if &a1[0] != &a2[0] {
		t.Error("second call for the same selector filtered again instead of using the memo")
	}
	b, _ := c.NodesMatching(ctx, map[string]string{"pool": "b"})
	if len(b) != 1 || b[0].Name != "n2" {
		t.Errorf("pool=b: got %v, want n2", names(b))
	}
	if all, _ := c.NodesMatching(ctx, nil); len(all) != 3 {
		t.Errorf("empty selector: got %d nodes, want all 3", len(all))
	}
}

func names(nodes []*corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}
