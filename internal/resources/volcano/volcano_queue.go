// Package volcano holds the resources for Volcano's own objects
// (aiplatform_volcano_queue), through the generic object path like the Kueue
// objects; Volcano itself is installed by aiplatform_volcano
// (internal/resources/installs).
package volcano

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

var queueKind = catalog.VolcanoQueueKind

type queueModel struct {
	object.ClusterMeta
	object.LiveChanges
	Weight      types.Int64  `tfsdk:"weight"`
	Capability  types.Map    `tfsdk:"capability"`
	Deserved    types.Map    `tfsdk:"deserved"`
	Guarantee   types.Map    `tfsdk:"guarantee"`
	Reclaimable types.Bool   `tfsdk:"reclaimable"`
	Parent      types.String `tfsdk:"parent"`
}

func resourceMap(desc string) schema.MapAttribute {
	return schema.MapAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: desc,
		Validators: []validator.Map{quantityValues{}}}
}

// NewQueue is aiplatform_volcano_queue.
func NewQueue() resource.Resource {
	return object.New[queueModel](object.Spec[queueModel]{
		TypeName: "volcano_queue",
		Kind:     queueKind,
		Description: "A Volcano Queue (`scheduling.volcano.sh/v1beta1`): a share of the cluster for the PodGroups submitted to it — " +
			"its weight among siblings, hard `capability`, `deserved` share (hierarchical queues, capacity plugin) and `guarantee`d resources.",
		Attributes: map[string]schema.Attribute{
			"weight": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(1),
				MarkdownDescription: "Share among sibling queues for the proportion plugin. Default 1.",
				Validators:          []validator.Int64{int64validator.Between(1, 65535)}},
			"capability": resourceMap("Most the queue's workloads may use, per resource (e.g. `{ \"nvidia.com/gpu\" = \"16\", cpu = \"128\" }`)."),
			"deserved":   resourceMap("What the queue deserves when the cluster is contended (capacity plugin, hierarchical queues)."),
			"guarantee":  resourceMap("Resources reserved for the queue whatever other queues use."),
			"reclaimable": schema.BoolAttribute{Optional: true, Computed: true,
				PlanModifiers:       []planmodifier.Bool{boolplanmodifier.UseStateForUnknown()},
				MarkdownDescription: "Whether other queues may reclaim what this queue uses beyond its share. Unset: Volcano's default (true)."},
			"parent": schema.StringAttribute{Optional: true, Computed: true,
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
				MarkdownDescription: "Parent queue (hierarchical queues). Unset: Volcano's default (`root`).",
				Validators:          []validator.String{validators.DNSSubdomain()}},
		},
		Fields: func(m *queueModel) map[string]any {
			spec := map[string]any{}
			object.Put(spec, "weight", m.Weight)
			object.Put(spec, "capability", object.MapOut(m.Capability))
			object.Put(spec, "deserved", object.MapOut(m.Deserved))
			if g := object.MapOut(m.Guarantee); g != nil {
				spec["guarantee"] = map[string]any{"resource": g}
			}
			object.Put(spec, "reclaimable", m.Reclaimable)
			object.Put(spec, "parent", m.Parent)
			return map[string]any{"spec": spec}
		},
		Read: func(live map[string]any, m *queueModel) {
			m.Weight = object.Int64(object.Field(live, "spec", "weight"))
			m.Capability = quantityMap(object.Fields(live, "spec", "capability"), m.Capability)
			m.Deserved = quantityMap(object.Fields(live, "spec", "deserved"), m.Deserved)
			m.Guarantee = quantityMap(object.Fields(live, "spec", "guarantee", "resource"), m.Guarantee)
			m.Reclaimable = types.BoolNull()
			if b, ok := object.Field(live, "spec", "reclaimable").(bool); ok {
				m.Reclaimable = types.BoolValue(b)
			}
			m.Parent = object.String(object.Field(live, "spec", "parent"), m.Parent)
		},
	})
}

// quantityMap reads a map of quantities, keeping the prior spelling of
// values that are equal ("1000m" stays "1" when the user wrote "1").
func quantityMap(live map[string]any, prior types.Map) types.Map {
	if len(live) == 0 {
		return object.StringMap(nil, prior)
	}
	priorElems := prior.Elements()
	out := make(map[string]attr.Value, len(live))
	for k, v := range live {
		p, _ := priorElems[k].(types.String)
		if priorElems[k] == nil {
			p = types.StringNull()
		}
		out[k] = object.Quantity(v, p)
	}
	return types.MapValueMust(types.StringType, out)
}

// quantityValues checks that every value of a map is a quantity.
type quantityValues struct{}

func (quantityValues) Description(context.Context) string {
	return "every value is a quantity such as \"8\", \"500m\" or \"64Gi\""
}
func (v quantityValues) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (quantityValues) ValidateMap(_ context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	for k, v := range req.ConfigValue.Elements() {
		s, ok := v.(types.String)
		if !ok || s.IsNull() || s.IsUnknown() {
			continue
		}
		if _, err := validators.ParseQuantity(s.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(req.Path.AtMapKey(k), "Invalid quantity",
				fmt.Sprintf("%s: %q is not a quantity such as \"8\", \"500m\" or \"64Gi\"", req.Path.AtMapKey(k), s.ValueString()))
		}
	}
}
