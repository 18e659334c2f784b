package migration

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestCRDName(t *testing.T) {
	for name, ok := range map[string]bool{
		"clusterqueues.kueue.x-k8s.io": true, "rayclusters.ray.io": true, "widgets.migration.aiplatform.test": true,
		"kueue.x-k8s.io": true, // the shape of a CRD name too: the API server says whether one exists
		"clusterqueues":  false, "ClusterQueues.kueue.x-k8s.io": false, "a..b": false, "": false,
	} {
		if got := crdName.MatchString(name); got != ok {
			t.Errorf("crdName(%q) = %v, want %v", name, got, ok)
		}
	}
}

func TestIDOfScope(t *testing.T) {
	set := types.SetValueMust(types.StringType, []attr.Value{types.StringValue("workloads.kueue.x-k8s.io"), types.StringValue("clusterqueues.kueue.x-k8s.io")})
	for _, c := range []struct {
		m    model
		want string
	}{
		{model{Group: types.StringValue("kueue.x-k8s.io"), CRDs: types.SetNull(types.StringType)}, "kueue.x-k8s.io"},
		{model{Group: types.StringNull(), CRDs: set}, "crds:clusterqueues.kueue.x-k8s.io,workloads.kueue.x-k8s.io"},
	} {
		if got := c.m.id(); got != c.want {
			t.Errorf("id() = %q, want %q", got, c.want)
		}
	}
}
