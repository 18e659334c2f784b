package kueue

import (
	"context"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// Kueue accepts a quota larger than the nodes (admitted pods then sit
// Pending); the plan warning is the only guard, so it is tested against the
// live cluster: a flavor whose node_labels pick the package's two 8-GPU nodes.
func TestAccQuotaAboveAllocatableWarns(t *testing.T) {
	env := testenv.Current()
	if env == nil {
		t.Skip("acceptance test: set TF_ACC=1")
	}
	ctx := context.Background()
	flavor := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
		"metadata": map[string]any{"name": "warn-h100"},
		"spec":     map[string]any{"nodeLabels": map[string]any{"testpool": "cq"}},
	}}
	if _, err := env.Dynamic.Resource(resourceFlavorKind.GVR()).Create(ctx, flavor, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(resourceFlavorKind.GVR()).Delete(ctx, "warn-h100", metav1.DeleteOptions{})
	})

	groups := func(quota string) []resourceGroup {
		return []resourceGroup{{
			CoveredResources: []types.String{types.StringValue("nvidia.com/gpu")},
			Flavors: []flavorQuotas{{Name: types.StringValue("warn-h100"), Resources: []resourceQuota{{
				Name: types.StringValue("nvidia.com/gpu"), NominalQuota: types.StringValue(quota),
			}}}},
		}}
	}
	client := kube.NewClientFromREST(env.RESTConfig, false)
	diags := planQuotas(ctx, client, groups("64"))
	if diags.HasError() || diags.WarningsCount() != 1 {
		t.Fatalf("want one warning, got %v", diags)
	}
	want := regexp.MustCompile(`nominal_quota 64 of nvidia.com/gpu in flavor "warn-h100" is more than the (16|24) allocatable on the \d+ Ready nodes matching the flavor's node_labels \{testpool=cq\}.*Pending`)
	if got := diags[0].Detail(); !want.MatchString(got) {
		t.Errorf("warning text %q does not say both numbers and the consequence", got)
	}
	if d := planQuotas(ctx, client, groups("8")); len(d) != 0 {
		t.Errorf("a quota within the nodes must not warn: %v", d)
	}
	if d := planQuotas(ctx, client, []resourceGroup{{
		CoveredResources: []types.String{types.StringValue("nvidia.com/gpu")},
		Flavors: []flavorQuotas{{Name: types.StringValue("not-created-yet"), Resources: []resourceQuota{{
			Name: types.StringValue("nvidia.com/gpu"), NominalQuota: types.StringValue("64"),
		}}}},
	}}); len(d) != 0 {
		t.Errorf("a flavor planned in the same run (not there yet) cannot be compared: %v", d)
	}
}
