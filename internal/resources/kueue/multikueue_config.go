package kueue

import (
	"context"
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/planned"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/rules"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

var (
	multiKueueConfigKind  = catalog.KueueMultiKueueConfig
	multiKueueClusterKind = catalog.KueueMultiKueueCluster
)

type multiKueueConfigModel struct {
	object.ClusterMeta
	object.LiveChanges
	Clusters []types.String `tfsdk:"clusters"`
	// applied is the clusters list being applied (BeforeApply), before the
	// live object is read back into Clusters.
	applied []string
}

// NewMultiKueueConfig is aiplatform_multikueue_config.
func NewMultiKueueConfig() resource.Resource {
	return object.New[multiKueueConfigModel](object.Spec[multiKueueConfigModel]{
		TypeName: "multikueue_config",
		Kind:     multiKueueConfigKind,
		Description: "A Kueue MultiKueueConfig: the worker clusters (MultiKueueCluster objects, `aiplatform_multikueue_cluster`) " +
			"a MultiKueue admission check dispatches workloads to. An `aiplatform_admission_check` with controller " +
			"`kueue.x-k8s.io/multikueue` names it in `parameters`; a ClusterQueue that uses that check runs its workloads " +
			"on whichever worker admits them first.",
		Attributes: map[string]schema.Attribute{
			"clusters": schema.ListAttribute{
				ElementType: types.StringType, Required: true,
				MarkdownDescription: "Names of the MultiKueueCluster objects of the workers (1 to 20, unique), in order.",
				Validators: []validator.List{listvalidator.SizeBetween(1, 20), listvalidator.UniqueValues(),
					listvalidator.ValueStringsAre(validators.DNSSubdomain())},
			},
		},
		Fields: func(m *multiKueueConfigModel) map[string]any {
			return map[string]any{"spec": map[string]any{"clusters": object.ListOut(m.Clusters)}}
		},
		Read: readMultiKueueConfig,
		// The workers it names against the MultiKueue clusters planned in
		// this run or live (internal/rules/multikueue_clusters.go).
		ModifyPlan: func(ctx context.Context, c *kube.Client, m *multiKueueConfigModel) diag.Diagnostics {
			if c == nil || !object.Known(m.Name) {
				return nil
			}
			f := planned.MultiKueueConfig{Name: m.Name.ValueString()}
			for _, v := range m.Clusters {
				f.Clusters = append(f.Clusters, v.ValueString()) // "" while unknown
			}
			return rules.Plan(ctx, c, f)
		},
		BeforeApply: func(_ context.Context, m *multiKueueConfigModel, _ map[string]any, _ func() (map[string]any, error)) (bool, error) {
			m.applied = nil
			for _, v := range m.Clusters {
				m.applied = append(m.applied, v.ValueString())
			}
			return false, nil
		},
		AfterApply: dropForeignClusters,
	})
}

func readMultiKueueConfig(live map[string]any, m *multiKueueConfigModel) {
	m.Clusters = object.StringList(object.Field(live, "spec", "clusters"), m.Clusters)
}

// dropForeignClusters removes the clusters another field manager added:
// spec.clusters is a set-typed list, whose elements a server-side apply
// merges with the other managers' instead of replacing them, so a worker
// added by hand would survive the apply that the plan showed removing it.
func dropForeignClusters(ctx context.Context, c *kube.Client, m *multiKueueConfigModel) diag.Diagnostics {
	var diags diag.Diagnostics
	want := m.applied
	var has []string
	live, found, err := c.Get(ctx, multiKueueConfigKind, m.ObjectRef())
	if err != nil || !found {
		return diags
	}
	for _, v := range object.List(live.Object, "spec", "clusters") {
		has = append(has, fmt.Sprint(v))
	}
	if len(want) == 0 || slices.Equal(has, want) {
		return diags
	}
	out, err := c.MergePatch(ctx, multiKueueConfigKind, m.ObjectRef(), map[string]any{"spec": map[string]any{"clusters": want}})
	if err != nil {
		diags.AddAttributeError(path.Root("clusters"), "Removing the clusters another field manager added failed", err.Error())
		return diags
	}
	readMultiKueueConfig(out.Object, m)
	return diags
}
