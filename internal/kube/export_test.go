package kube

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DriftByDryRun is an object's drift as the dry run alone finds it, and
// whether the local comparison says the object is in sync: the acceptance
// test holds the two to the same answer.
func (c *Client) DriftByDryRun(ctx context.Context, obj *unstructured.Unstructured, ns string) (ObjectDrift, bool) {
	d := c.objectDrift(ctx, obj.DeepCopy(), ns, false)
	want := obj.DeepCopy()
	ri, _, err := c.ObjectClient(want, ns)
	if err != nil {
		return d, false
	}
	live, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return d, false
	}
	unstructured.RemoveNestedField(want.Object, "status")
	return d, inSync(want, live)
}

// SetMigratePage sets the page size of MigrateStorage's listing and returns
// the function that restores it.
func SetMigratePage(n int64) func() {
	old := migratePage
	migratePage = n
	return func() { migratePage = old }
}
