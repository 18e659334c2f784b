package kube

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Only a ClusterRole that nobody but the aggregation controller wrote is
// one it re-created: a role Helm installed keeps Helm's manager beside the
// controller's, and other kinds are never re-created that way. A role with
// neither a manager nor rules is what the controller leaves when it
// re-creates a role whose sources are all gone.
func TestRecreatedByAggregation(t *testing.T) {
	role := func(kind string, managers ...string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetAPIVersion("rbac.authorization.k8s.io/v1")
		o.SetKind(kind)
		o.SetName("kueue-batch-admin-role")
		var mf []metav1.ManagedFieldsEntry
		for _, m := range managers {
			mf = append(mf, metav1.ManagedFieldsEntry{Manager: m})
		}
		o.SetManagedFields(mf)
		return o
	}
	withRules := func(o *unstructured.Unstructured) *unstructured.Unstructured {
		o.Object["rules"] = []any{map[string]any{"verbs": []any{"get"}, "apiGroups": []any{""}, "resources": []any{"pods"}}}
		return o
	}
	for _, c := range []struct {
		obj  *unstructured.Unstructured
		want bool
	}{
		{role("ClusterRole", AggregationManager), true},
		{role("ClusterRole", "helm", AggregationManager), false},
		// every source gone: the controller's apply of no rules leaves no manager
		{role("ClusterRole"), true},
		{withRules(role("ClusterRole")), false},
		{role("Role", AggregationManager), false},
	} {
		if got := RecreatedByAggregation(c.obj); got != c.want {
			t.Errorf("%s managed by %v: %v, want %v", c.obj.GetKind(), Managers(c.obj), got, c.want)
		}
	}
}
