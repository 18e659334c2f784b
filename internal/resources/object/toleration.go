package object

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// The one Terraform model of a Kubernetes toleration (corev1.Toleration) and
// of a node taint (corev1.Taint), for every resource that writes them: a
// Kueue ResourceFlavor, the pod templates of Ray clusters and LeaderWorkerSets,
// a GPU node pool.

// Toleration is a corev1.Toleration.
type Toleration struct {
	Key               types.String `tfsdk:"key"`
	Operator          types.String `tfsdk:"operator"`
	Value             types.String `tfsdk:"value"`
	Effect            types.String `tfsdk:"effect"`
	TolerationSeconds types.Int64  `tfsdk:"toleration_seconds"`
}

// Taint is a corev1.Taint.
type Taint struct {
	Key    types.String `tfsdk:"key"`
	Value  types.String `tfsdk:"value"`
	Effect types.String `tfsdk:"effect"`
}

// TaintEffects are the effects a taint has and a toleration matches.
var TaintEffects = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}

const (
	opExists   = "Exists"
	opEqual    = "Equal"
	noExecute  = "NoExecute"
	effectDesc = "`NoSchedule`, `PreferNoSchedule` or `NoExecute`"
)

// TolerationsAttribute is an optional list of tolerations in a resource
// schema. Each element is checked at plan time the way the API server checks a
// pod's tolerations: operator Equal or Exists, a known effect, no value with
// Exists, operator Exists without a key, toleration_seconds only with
// NoExecute. The caller may add list validators and plan modifiers.
func TolerationsAttribute(description string) schema.ListNestedAttribute {
	return schema.ListNestedAttribute{
		Optional:            true,
		MarkdownDescription: description,
		NestedObject: schema.NestedAttributeObject{
			Attributes: map[string]schema.Attribute{
				"key": schema.StringAttribute{Optional: true, MarkdownDescription: "Taint key; unset with operator `Exists` tolerates every taint.",
					Validators: []validator.String{validators.QualifiedName()}},
				"operator": schema.StringAttribute{Optional: true, MarkdownDescription: "`Equal` (Kubernetes' default) or `Exists`.",
					Validators: []validator.String{stringvalidator.OneOf(opEqual, opExists)}},
				"value": schema.StringAttribute{Optional: true, MarkdownDescription: "Taint value (with `Equal`).",
					Validators: []validator.String{validators.LabelValue()}},
				"effect": schema.StringAttribute{Optional: true, MarkdownDescription: effectDesc + "; unset matches all.",
					Validators: []validator.String{stringvalidator.OneOf(TaintEffects...)}},
				"toleration_seconds": schema.Int64Attribute{Optional: true,
					MarkdownDescription: "How long the pod stays bound after a `NoExecute` taint appears; only with effect `NoExecute`.",
					Validators:          []validator.Int64{int64validator.AtLeast(0)}},
			},
			Validators: []validator.Object{tolerationValidator{}},
		},
	}
}

// TaintsAttribute is an optional list of node taints in a resource schema:
// a required key and effect, an optional value.
func TaintsAttribute(description string) schema.ListNestedAttribute {
	return schema.ListNestedAttribute{
		Optional:            true,
		MarkdownDescription: description,
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"key":   schema.StringAttribute{Required: true, MarkdownDescription: "Taint key.", Validators: []validator.String{validators.QualifiedName()}},
			"value": schema.StringAttribute{Optional: true, MarkdownDescription: "Taint value.", Validators: []validator.String{validators.LabelValue()}},
			"effect": schema.StringAttribute{Required: true, MarkdownDescription: effectDesc + ".",
				Validators: []validator.String{stringvalidator.OneOf(TaintEffects...)}},
		}},
	}
}

// tolerationValidator checks one toleration across its attributes.
type tolerationValidator struct{}

func (tolerationValidator) Description(context.Context) string {
	return "a toleration the API server accepts"
}

func (v tolerationValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (tolerationValidator) ValidateObject(ctx context.Context, req validator.ObjectRequest, resp *validator.ObjectResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	var t Toleration
	if d := req.ConfigValue.As(ctx, &t, basetypes.ObjectAsOptions{}); d.HasError() {
		return
	}
	resp.Diagnostics.Append(withPaths(CheckToleration(req.Path, t))...)
}

// CheckToleration checks one toleration across its attributes, as the API
// server does; p is the toleration's path. Unknown values pass.
func CheckToleration(p path.Path, t Toleration) diag.Diagnostics {
	var diags diag.Diagnostics
	exists := t.Operator.ValueString() == opExists
	if t.Key.ValueString() == "" && !t.Key.IsUnknown() && !exists && !t.Operator.IsUnknown() {
		diags.AddAttributeError(p.AtName("operator"), "Toleration without key",
			"A toleration without key matches every taint and needs operator = \"Exists\".")
	}
	if exists && Known(t.Value) && t.Value.ValueString() != "" {
		diags.AddAttributeError(p.AtName("value"), "Value with operator Exists",
			"A toleration with operator = \"Exists\" must not set value.")
	}
	if !t.TolerationSeconds.IsNull() && t.Effect.ValueString() != noExecute && !t.Effect.IsUnknown() {
		diags.AddAttributeError(p.AtName("toleration_seconds"), "toleration_seconds needs effect NoExecute",
			"toleration_seconds only applies to effect = \"NoExecute\".")
	}
	return diags
}

// TolerationsToObject converts tolerations for an object; nil gives nil.
func TolerationsToObject(in []Toleration) []any {
	if in == nil {
		return nil
	}
	out := make([]any, len(in))
	for i, t := range in {
		m := map[string]any{}
		Put(m, "key", t.Key)
		Put(m, "operator", t.Operator)
		Put(m, "value", t.Value)
		Put(m, "effect", t.Effect)
		Put(m, "tolerationSeconds", t.TolerationSeconds)
		out[i] = m
	}
	return out
}

// TolerationsFromObject reads an object's list of tolerations; absent or
// empty gives nil.
func TolerationsFromObject(in []any) []Toleration { return ReadTolerations(in, nil) }

// ReadTolerations is TolerationsFromObject keeping the prior value's
// spellings: an empty string the user wrote for an attribute the server
// omits, an empty list for an absent one.
func ReadTolerations(in []any, prior []Toleration) []Toleration {
	items := maps(in)
	if len(items) == 0 {
		return EmptyOrNil(prior)
	}
	out := make([]Toleration, len(items))
	for i, it := range items {
		var p Toleration
		if i < len(prior) {
			p = prior[i]
		}
		out[i] = Toleration{
			Key:               String(it["key"], p.Key),
			Operator:          String(it["operator"], p.Operator),
			Value:             String(it["value"], p.Value),
			Effect:            String(it["effect"], p.Effect),
			TolerationSeconds: Int64(it["tolerationSeconds"]),
		}
	}
	return out
}

// Equal reports whether two tolerations are the same, attribute by attribute.
func (t Toleration) Equal(o Toleration) bool {
	return t.Key.Equal(o.Key) && t.Operator.Equal(o.Operator) && t.Value.Equal(o.Value) &&
		t.Effect.Equal(o.Effect) && t.TolerationSeconds.Equal(o.TolerationSeconds)
}

// TaintsToObject converts taints for an object; nil gives nil.
func TaintsToObject(in []Taint) []any {
	if in == nil {
		return nil
	}
	out := make([]any, len(in))
	for i, t := range in {
		m := map[string]any{}
		Put(m, "key", t.Key)
		Put(m, "value", t.Value)
		Put(m, "effect", t.Effect)
		out[i] = m
	}
	return out
}

// TaintsFromObject reads an object's list of taints; absent or empty gives nil.
func TaintsFromObject(in []any) []Taint { return ReadTaints(in, nil) }

// ReadTaints is TaintsFromObject keeping the prior value's spellings.
func ReadTaints(in []any, prior []Taint) []Taint {
	items := maps(in)
	if len(items) == 0 {
		return EmptyOrNil(prior)
	}
	out := make([]Taint, len(items))
	for i, it := range items {
		var p Taint
		if i < len(prior) {
			p = prior[i]
		}
		out[i] = Taint{Key: String(it["key"], p.Key), Value: String(it["value"], p.Value), Effect: String(it["effect"], p.Effect)}
	}
	return out
}

// EmptyOrNil is what an absent list reads as: an empty list the user wrote
// stays empty; anything else is null.
func EmptyOrNil[E any](prior []E) []E {
	if prior != nil && len(prior) == 0 {
		return prior
	}
	return nil
}

// maps keeps the elements of list that are maps.
func maps(list []any) []map[string]any {
	out := make([]map[string]any, 0, len(list))
	for _, it := range list {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}
