package kueue

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
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
	NodeLabels   types.Map    `tfsdk:"node_labels"`
	NodeTaints   []taint      `tfsdk:"node_taints"`
	Tolerations  []toleration `tfsdk:"tolerations"`
	TopologyName types.String `tfsdk:"topology_name"`
}

type taint struct {
	Key    types.String `tfsdk:"key"`
	Value  types.String `tfsdk:"value"`
	Effect types.String `tfsdk:"effect"`
}

type toleration struct {
	Key               types.String `tfsdk:"key"`
	Operator          types.String `tfsdk:"operator"`
	Value             types.String `tfsdk:"value"`
	Effect            types.String `tfsdk:"effect"`
	TolerationSeconds types.Int64  `tfsdk:"toleration_seconds"`
}

var taintEffects = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}

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
			"node_taints": schema.ListNestedAttribute{
				Optional:            true,
				MarkdownDescription: "Taints of the nodes; workloads are admitted to this flavor only if they tolerate them (at most 8).",
				Validators:          []validator.List{listvalidator.SizeAtMost(8)},
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"key":    schema.StringAttribute{Required: true, Validators: []validator.String{validators.QualifiedName()}},
					"value":  schema.StringAttribute{Optional: true, Validators: []validator.String{validators.LabelValue()}},
					"effect": schema.StringAttribute{Required: true, MarkdownDescription: "`NoSchedule`, `PreferNoSchedule` or `NoExecute`.", Validators: []validator.String{stringvalidator.OneOf(taintEffects...)}},
				}},
			},
			"tolerations": schema.ListNestedAttribute{
				Optional:            true,
				MarkdownDescription: "Tolerations Kueue adds to the pods of workloads admitted to this flavor (at most 8). Immutable once `topology_name` is set.",
				Validators:          []validator.List{listvalidator.SizeAtMost(8)},
				PlanModifiers:       []planmodifier.List{listplanmodifier.RequiresReplaceIf(whenTopologySetList, "Kueue makes tolerations immutable when topology_name is set.", "Kueue makes `tolerations` immutable when `topology_name` is set.")},
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"key":                schema.StringAttribute{Optional: true, MarkdownDescription: "Taint key; empty with operator `Exists` tolerates everything.", Validators: []validator.String{validators.QualifiedName()}},
					"operator":           schema.StringAttribute{Optional: true, MarkdownDescription: "`Equal` (Kubernetes' default) or `Exists`.", Validators: []validator.String{stringvalidator.OneOf("Equal", "Exists")}},
					"value":              schema.StringAttribute{Optional: true, Validators: []validator.String{validators.LabelValue()}},
					"effect":             schema.StringAttribute{Optional: true, MarkdownDescription: "`NoSchedule`, `PreferNoSchedule` or `NoExecute`; empty matches all.", Validators: []validator.String{stringvalidator.OneOf(taintEffects...)}},
					"toleration_seconds": schema.Int64Attribute{Optional: true, MarkdownDescription: "Only with effect `NoExecute`.", Validators: []validator.Int64{int64validator.AtLeast(0)}},
				}},
			},
			"topology_name": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Name of a Kueue Topology for topology-aware scheduling. Requires `node_labels`; changing it replaces the flavor.",
				Validators:          []validator.String{validators.DNSSubdomain()},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
		},
		Fields:   resourceFlavorFields,
		Read:     readResourceFlavor,
		Validate: validateResourceFlavor,
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
		spec["nodeTaints"] = taintsOut(m.NodeTaints)
	}
	if len(m.Tolerations) > 0 {
		spec["tolerations"] = tolerationsOut(m.Tolerations)
	}
	object.Put(spec, "topologyName", m.TopologyName)
	return map[string]any{"spec": spec}
}

func readResourceFlavor(live map[string]any, m *resourceFlavorModel) {
	spec := object.Fields(live, "spec")
	m.NodeLabels = object.StringMap(spec["nodeLabels"], m.NodeLabels)
	m.NodeTaints = taintsIn(object.Items(spec, "nodeTaints"), m.NodeTaints)
	m.Tolerations = tolerationsIn(object.Items(spec, "tolerations"), m.Tolerations)
	m.TopologyName = object.String(spec["topologyName"], m.TopologyName)
}

func validateResourceFlavor(m *resourceFlavorModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if !m.TopologyName.IsNull() && !m.NodeLabels.IsUnknown() && len(m.NodeLabels.Elements()) == 0 {
		diags.AddAttributeError(path.Root("node_labels"), "node_labels required with topology_name",
			"Kueue requires at least one node label when topology_name is set.")
	}
	diags.Append(validateTolerations(path.Root("tolerations"), m.Tolerations)...)
	return diags
}

// validateTolerations mirrors the rules Kueue's CRD enforces, at plan time.
func validateTolerations(p path.Path, ts []toleration) diag.Diagnostics {
	var diags diag.Diagnostics
	for i, t := range ts {
		ip := p.AtListIndex(i)
		exists := t.Operator.ValueString() == "Exists"
		if t.Key.ValueString() == "" && !t.Key.IsUnknown() && !exists && !t.Operator.IsUnknown() {
			diags.AddAttributeError(ip.AtName("operator"), "Toleration without key",
				"A toleration without key matches every taint and needs operator = \"Exists\".")
		}
		if exists && !t.Value.IsNull() {
			diags.AddAttributeError(ip.AtName("value"), "Value with operator Exists",
				"A toleration with operator = \"Exists\" must not set value.")
		}
		if !t.TolerationSeconds.IsNull() && t.Effect.ValueString() != "NoExecute" && !t.Effect.IsUnknown() {
			diags.AddAttributeError(ip.AtName("toleration_seconds"), "toleration_seconds needs effect NoExecute",
				"toleration_seconds only applies to effect = \"NoExecute\".")
		}
	}
	return diags
}

func taintsOut(ts []taint) []any {
	out := make([]any, len(ts))
	for i, t := range ts {
		m := map[string]any{}
		object.Put(m, "key", t.Key)
		object.Put(m, "value", t.Value)
		object.Put(m, "effect", t.Effect)
		out[i] = m
	}
	return out
}

func taintsIn(items []map[string]any, prior []taint) []taint {
	if len(items) == 0 {
		return emptyOrNil(prior)
	}
	out := make([]taint, len(items))
	for i, it := range items {
		var p taint
		if i < len(prior) {
			p = prior[i]
		}
		out[i] = taint{Key: object.String(it["key"], p.Key), Value: object.String(it["value"], p.Value), Effect: object.String(it["effect"], p.Effect)}
	}
	return out
}

func tolerationsOut(ts []toleration) []any {
	out := make([]any, len(ts))
	for i, t := range ts {
		m := map[string]any{}
		object.Put(m, "key", t.Key)
		object.Put(m, "operator", t.Operator)
		object.Put(m, "value", t.Value)
		object.Put(m, "effect", t.Effect)
		object.Put(m, "tolerationSeconds", t.TolerationSeconds)
		out[i] = m
	}
	return out
}

func tolerationsIn(items []map[string]any, prior []toleration) []toleration {
	if len(items) == 0 {
		return emptyOrNil(prior)
	}
	out := make([]toleration, len(items))
	for i, it := range items {
		var p toleration
		if i < len(prior) {
			p = prior[i]
		}
		out[i] = toleration{
			Key:               object.String(it["key"], p.Key),
			Operator:          object.String(it["operator"], p.Operator),
			Value:             object.String(it["value"], p.Value),
			Effect:            object.String(it["effect"], p.Effect),
			TolerationSeconds: object.Int64(it["tolerationSeconds"]),
		}
	}
	return out
}

// emptyOrNil keeps an empty list the user wrote as empty; anything else absent is null.
func emptyOrNil[E any](prior []E) []E {
	if prior != nil && len(prior) == 0 {
		return prior
	}
	return nil
}
