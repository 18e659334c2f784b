package kueue

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

type resourceFlavorModel struct {
	object.ClusterMeta
	object.LiveChanges
	NodeLabels   types.Map           `tfsdk:"node_labels"`
	NodeTaints   []object.Taint      `tfsdk:"node_taints"`
	Tolerations  []object.Toleration `tfsdk:"tolerations"`
	TopologyName types.String        `tfsdk:"topology_name"`
}

// NewResourceFlavor is aiplatform_resource_flavor.
func NewResourceFlavor() resource.Resource {
	return object.New[resourceFlavorModel](object.Spec[resourceFlavorModel]{
		TypeName: "resource_flavor",
		Kind:     resourceFlavorKind,
		Description: "A Kueue ResourceFlavor: one kind of node (a GPU pool) that ClusterQueues give quota for. " +
			"Kueue injects `node_labels` as a node selector and `tolerations` into the pods of admitted workloads.",
		Attributes: map[string]schema.Attribute{
			"node_labels": schema.MapAttribute{
				ElementType:         types.StringType,
				Optional:            true,
				MarkdownDescription: "Labels of the nodes this flavor stands for (at most 8). Immutable once `topology_name` is set.",
				Validators:          []validator.Map{mapvalidator.SizeAtMost(8), validators.Labels()},
				PlanModifiers:       []planmodifier.Map{mapplanmodifier.RequiresReplaceIf(whenTopologySet, "Kueue makes node_labels immutable when topology_name is set.", "Kueue makes `node_labels` immutable when `topology_name` is set.")},
			},
			"node_taints": nodeTaintsAttribute(),
			"tolerations": tolerationsAttribute(),
			"topology_name": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Name of a Kueue Topology (`aiplatform_topology`) for topology-aware scheduling. Requires `node_labels`; " +
					"changing it replaces the flavor. The plan warns when nodes matching `node_labels` lack a level label of the Topology.",
				Validators:    []validator.String{validators.DNSSubdomain()},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
		},
		Fields:     resourceFlavorFields,
		Read:       readResourceFlavor,
		Validate:   validateResourceFlavor,
		ModifyPlan: planResourceFlavor,
	})
}

func whenTopologySet(ctx context.Context, req planmodifier.MapRequest, resp *mapplanmodifier.RequiresReplaceIfFuncResponse) {
	resp.RequiresReplace = topologySet(ctx, req.State.GetAttribute)
}

func whenTopologySetList(ctx context.Context, req planmodifier.ListRequest, resp *listplanmodifier.RequiresReplaceIfFuncResponse) {
	resp.RequiresReplace = topologySet(ctx, req.State.GetAttribute)
}

func topologySet(ctx context.Context, get func(context.Context, path.Path, any) diag.Diagnostics) bool {
	var t types.String
	get(ctx, path.Root("topology_name"), &t)
	return !t.IsNull() && !t.IsUnknown()
}

func resourceFlavorFields(m *resourceFlavorModel) map[string]any {
	spec := map[string]any{}
	object.Put(spec, "nodeLabels", object.MapOut(m.NodeLabels))
	if len(m.NodeTaints) > 0 {
		spec["nodeTaints"] = object.TaintsToObject(m.NodeTaints)
	}
	if len(m.Tolerations) > 0 {
		spec["tolerations"] = object.TolerationsToObject(m.Tolerations)
	}
	object.Put(spec, "topologyName", m.TopologyName)
	return map[string]any{"spec": spec}
}

func readResourceFlavor(live map[string]any, m *resourceFlavorModel) {
	spec := object.Fields(live, "spec")
	m.NodeLabels = object.StringMap(spec["nodeLabels"], m.NodeLabels)
	m.NodeTaints = object.ReadTaints(object.List(spec, "nodeTaints"), m.NodeTaints)
	m.Tolerations = object.ReadTolerations(object.List(spec, "tolerations"), m.Tolerations)
	m.TopologyName = object.String(spec["topologyName"], m.TopologyName)
}

func validateResourceFlavor(m *resourceFlavorModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if !m.TopologyName.IsNull() && !m.NodeLabels.IsUnknown() && len(m.NodeLabels.Elements()) == 0 {
		diags.AddAttributeError(path.Root("node_labels"), "node_labels required with topology_name",
			"Kueue requires at least one node label when topology_name is set.")
	}
	return diags
}

func nodeTaintsAttribute() schema.ListNestedAttribute {
	a := object.TaintsAttribute("Taints of the nodes; workloads are admitted to this flavor only if they tolerate them (at most 8).")
	a.Validators = []validator.List{listvalidator.SizeAtMost(8)}
	return a
}

func tolerationsAttribute() schema.ListNestedAttribute {
	a := object.TolerationsAttribute("Tolerations Kueue adds to the pods of workloads admitted to this flavor (at most 8). Immutable once `topology_name` is set.")
	a.Validators = []validator.List{listvalidator.SizeAtMost(8)}
	a.PlanModifiers = []planmodifier.List{listplanmodifier.RequiresReplaceIf(whenTopologySetList, "Kueue makes tolerations immutable when topology_name is set.", "Kueue makes `tolerations` immutable when `topology_name` is set.")}
	return a
}
