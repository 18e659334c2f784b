package kueue

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// Kueue's TAS silently leaves out nodes without a level label; the plan
// warning is the only guard. The package's "tas" pool has one node with the
// block label (tas-labelled-0) and one without (tas-bare-0).
func TestAccTopologyFlavorWarnsAboutUnlabelledNodes(t *testing.T) {
	env := testenv.Current()
	if env == nil {
		t.Skip("acceptance test: set TF_ACC=1")
	}
	ctx := context.Background()
	topo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
		"metadata": map[string]any{"name": "warn-blocks"},
		"spec": map[string]any{"levels": []any{
			map[string]any{"nodeLabel": "example.com/block"}, map[string]any{"nodeLabel": "kubernetes.io/hostname"},
		}},
	}}
	if _, err := env.Dynamic.Resource(topologyKind.GVR()).Create(ctx, topo, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(topologyKind.GVR()).Delete(ctx, "warn-blocks", metav1.DeleteOptions{})
	})
	client := kube.NewClientFromREST(env.RESTConfig, false)
	flavor := func(topology string, labels map[string]string) *resourceFlavorModel {
		return &resourceFlavorModel{NodeLabels: types.MapValueMust(types.StringType, stringValues(labels)), TopologyName: types.StringValue(topology)}
	}

	diags := planResourceFlavor(ctx, client, flavor("warn-blocks", map[string]string{"testpool": "tas"}))
	if diags.HasError() || diags.WarningsCount() != 1 {
		t.Fatalf("want one warning, got %v", diags)
	}
	got := diags[0].Detail()
	for _, want := range []string{"1 of the 2 nodes matching node_labels {testpool=tas}", `topology "warn-blocks" (example.com/block)`, "tas-bare-0 (no example.com/block)", "cannot place"} {
		if !strings.Contains(got, want) {
			t.Errorf("warning %q does not say %q", got, want)
		}
	}
	if strings.Contains(got, "tas-labelled-0") {
		t.Errorf("warning names a labelled node: %q", got)
	}
	if d := planResourceFlavor(ctx, client, flavor("warn-blocks", map[string]string{"testpool": "tas", "example.com/block": "b1"})); len(d) != 0 {
		t.Errorf("a flavor whose nodes all carry the levels must not warn: %v", d)
	}
	if d := planResourceFlavor(ctx, client, flavor("not-created-yet", map[string]string{"testpool": "tas"})); len(d) != 0 {
		t.Errorf("a topology planned in the same run (not there yet) cannot be compared: %v", d)
	}
}

func stringValues(m map[string]string) map[string]attr.Value {
	out := make(map[string]attr.Value, len(m))
	for k, v := range m {
		out[k] = types.StringValue(v)
	}
	return out
}
