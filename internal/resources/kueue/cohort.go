package kueue

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

type cohortModel struct {
	object.ClusterMeta
	object.LiveChanges
	Parent         types.String    `tfsdk:"parent"`
	FairSharing    *fairSharing    `tfsdk:"fair_sharing"`
	ResourceGroups []resourceGroup `tfsdk:"resource_groups"`
}

// NewCohort is aiplatform_cohort.
func NewCohort() resource.Resource {
	return object.New[cohortModel](object.Spec[cohortModel]{
		TypeName: "cohort",
		Kind:     cohortKind,
		Description: "A Kueue Cohort: a named group of ClusterQueues (and child cohorts) that lend each other unused quota. " +
			"A ClusterQueue joins by naming it in `cohort`; the Cohort object adds a parent in a tree of cohorts, quota of " +
			"its own shared by its members, and a fair-sharing weight.",
		Attributes: map[string]schema.Attribute{
			"parent": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Parent cohort (Kueue `spec.parentName`): this cohort's members may borrow from the parent's tree.",
				Validators:          []validator.String{validators.DNSSubdomain()},
			},
			"fair_sharing":    fairSharingAttribute("Weight of this cohort among its parent's members in fair sharing."),
			"resource_groups": resourceGroupsAttribute("Cohort"),
		},
		Fields: func(m *cohortModel) map[string]any {
			spec := map[string]any{}
			object.Put(spec, "parentName", m.Parent)
			fairSharingOut(spec, m.FairSharing)
			if len(m.ResourceGroups) > 0 {
				spec["resourceGroups"] = resourceGroupsOut(m.ResourceGroups)
			}
			return map[string]any{"spec": spec}
		},
		Read: func(live map[string]any, m *cohortModel) {
			spec := object.Fields(live, "spec")
			m.Parent = object.String(spec["parentName"], m.Parent)
			m.FairSharing = fairSharingIn(spec, m.FairSharing)
			m.ResourceGroups = resourceGroupsIn(object.Items(spec, "resourceGroups"), m.ResourceGroups)
		},
		Validate: func(m *cohortModel) diag.Diagnostics {
			var diags diag.Diagnostics
			if !m.Parent.IsNull() && !m.Parent.IsUnknown() && !m.Name.IsUnknown() && m.Parent.ValueString() == m.Name.ValueString() {
				diags.AddAttributeError(path.Root("parent"), "Cohort is its own parent", "a cohort cannot be its own parent: that is a cycle Kueue rejects.")
			}
			// A cohort always lends and borrows within its tree: borrowing limits are allowed.
			diags.Append(validateResourceGroups(m.ResourceGroups, true)...)
			return diags
		},
		ModifyPlan: func(ctx context.Context, c *kube.Client, plan *cohortModel) diag.Diagnostics {
			return planQuotas(ctx, c, plan.ResourceGroups)
		},
	})
}
