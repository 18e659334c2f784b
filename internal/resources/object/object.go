// Package object is the one generic path for a Terraform resource that manages a
// single Kubernetes object: create and update by server-side apply, read back
// from the live object, delete and wait until gone, import by name or
// namespace/name. A resource file only says how its model maps to its object.
package object

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// ClusterMeta is embedded in the model of a cluster-scoped object.
type ClusterMeta struct {
	ID   types.String `tfsdk:"id"`
	Name types.String `tfsdk:"name"`
}

// ObjectRef names the object.
func (m *ClusterMeta) ObjectRef() kube.Ref { return kube.Ref{Name: m.Name.ValueString()} }

// SetObjectRef sets name and id.
func (m *ClusterMeta) SetObjectRef(r kube.Ref) {
	m.Name = types.StringValue(r.Name)
	m.ID = types.StringValue(r.String())
}

// NamespacedMeta is embedded in the model of a namespaced object.
type NamespacedMeta struct {
	ID        types.String `tfsdk:"id"`
	Namespace types.String `tfsdk:"namespace"`
	Name      types.String `tfsdk:"name"`
}

// ObjectRef names the object.
func (m *NamespacedMeta) ObjectRef() kube.Ref {
	return kube.Ref{Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString()}
}

// SetObjectRef sets namespace, name and id.
func (m *NamespacedMeta) SetObjectRef(r kube.Ref) {
	m.Namespace = types.StringValue(r.Namespace)
	m.Name = types.StringValue(r.Name)
	m.ID = types.StringValue(r.String())
}

// Model is a resource model whose pointer names its object (through ClusterMeta
// or NamespacedMeta) and which embeds LiveChanges.
type Model[T any] interface {
	*T
	ObjectRef() kube.Ref
	SetObjectRef(kube.Ref)
	acceptedLiveChanges() types.List
	waitTimeouts() timeouts.Value
}

// Spec is everything that differs between two object resources.
type Spec[T any] struct {
	// TypeName without the provider prefix, e.g. "resource_flavor".
	TypeName    string
	Kind        kube.Kind
	Description string
	// Attributes specific to the resource; id, name and namespace are added here.
	Attributes map[string]schema.Attribute
	// Fields builds the object's top-level fields (spec, or a kind's own fields)
	// from a fully known model.
	Fields func(m *T) map[string]any
	// Read sets the managed attributes of m from the live object. m holds the
	// prior state (everything null on import), which decides between spellings
	// the server treats as equal, so a refresh never invents a diff.
	Read func(live map[string]any, m *T)
	// Validate checks the configuration across attributes without I/O. It runs
	// at plan time when the configuration is known, and again during apply,
	// when Terraform validates the configuration with every value known.
	Validate func(m *T) diag.Diagnostics
	// ModifyPlan computes planned values from the live cluster (derived quota)
	// and may warn. c is nil when the provider's configuration is not known yet.
	ModifyPlan func(ctx context.Context, c *kube.Client, plan *T) diag.Diagnostics
	// AfterApply, when set, runs after every create and update once the
	// applied object has been read back into m: it may wait for the
	// object's controller (readiness) and refresh m's computed attributes.
	AfterApply func(ctx context.Context, c *kube.Client, m *T) diag.Diagnostics
	// BeforeApply, when set, may adjust the fields about to be applied from
	// the live object, which live reads when called (nil when the object does
	// not exist yet) — values another controller owns and the configuration
	// leaves to it — and may ask for a forced apply, for fields that
	// controller only ever updates.
	BeforeApply func(ctx context.Context, m *T, fields map[string]any, live func() (map[string]any, error)) (force bool, err error)
	// ApplyTimeout, when set, is how long AfterApply may wait by default:
	// the timeouts block then has create and update, and AfterApply runs
	// under their deadline (Budget and TimeoutHint tell it which).
	ApplyTimeout time.Duration
	// DeleteTimeout is timeouts.delete's default; DefaultDeleteTimeout when 0.
	DeleteTimeout time.Duration
	// LegacyTimeout, when set, is m's deprecated `timeout` attribute
	// (LegacyTimeout): the wait's default for an operation that the
	// timeouts block does not set.
	LegacyTimeout func(m *T) types.String
	// ImportReport, when set, lists for an object read into m on import
	// the fields m carries in a pod_template overlay (carried) and the
	// fields no attribute carries (lost), each by its path in the object;
	// the import then warns with both (import_report.go). ImportCarrier
	// names the attribute that carries them ("pod_template" when empty).
	ImportReport  func(live map[string]any, m *T) (carried, lost []string)
	ImportCarrier string
}

type assertModel struct {
	ClusterMeta
	LiveChanges
}

// Resource is the generic Terraform resource for one Kubernetes object.
type Resource[T any, P Model[T]] struct {
	spec   Spec[T]
	client *kube.Client
}

// New returns the resource described by spec.
func New[T any, P Model[T]](spec Spec[T]) resource.Resource {
	return &Resource[T, P]{spec: spec}
}

var (
	_ resource.ResourceWithConfigure      = (*Resource[assertModel, *assertModel])(nil)
	_ resource.ResourceWithImportState    = (*Resource[assertModel, *assertModel])(nil)
	_ resource.ResourceWithValidateConfig = (*Resource[assertModel, *assertModel])(nil)
	_ resource.ResourceWithModifyPlan     = (*Resource[assertModel, *assertModel])(nil)
)

func (r *Resource[T, P]) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // a destroy
	}
	defer func() {
		// The framework marks computed attributes unknown as soon as the
		// proposed plan differs from state, before plan modifiers run; when
		// they then bring every configured value back to state (a default
		// kept from state, e.g. an autoscaled group's replicas after import),
		// nothing changes and the computed values stay as refreshed.
		if !resp.Diagnostics.HasError() && !req.State.Raw.IsNull() && req.Config.Raw.IsFullyKnown() &&
			sameExceptUnknown(resp.Plan.Raw, req.State.Raw) {
			resp.Plan.Raw = req.State.Raw
		}
	}()
	var m T
	// A plan with values unknown until apply (whole lists from other
	// resources) cannot be decoded; its derived values stay unknown.
	if d := req.Plan.Get(ctx, &m); d.HasError() {
		return
	}
	if r.spec.ModifyPlan != nil {
		resp.Diagnostics.Append(r.spec.ModifyPlan(ctx, r.client, &m)...)
		if resp.Diagnostics.HasError() {
			return
		}
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &m)...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	// What the apply would do to the live object beyond the attributes.
	r.previewLive(ctx, req, resp, &m)
}

// sameExceptUnknown reports whether plan equals state wherever plan is known.
func sameExceptUnknown(plan, state tftypes.Value) bool {
	if !plan.IsKnown() {
		return true
	}
	if !plan.Type().Equal(state.Type()) || plan.IsNull() != state.IsNull() || !state.IsKnown() {
		return false
	}
	if plan.IsNull() || plan.IsFullyKnown() {
		return plan.Equal(state)
	}
	switch plan.Type().(type) {
	case tftypes.List, tftypes.Tuple:
		var p, s []tftypes.Value
		if plan.As(&p) != nil || state.As(&s) != nil || len(p) != len(s) {
			return false
		}
		for i := range p {
			if !sameExceptUnknown(p[i], s[i]) {
				return false
			}
		}
		return true
	case tftypes.Map, tftypes.Object:
		var p, s map[string]tftypes.Value
		if plan.As(&p) != nil || state.As(&s) != nil || len(p) != len(s) {
			return false
		}
		for k, v := range p {
			sv, ok := s[k]
			if !ok || !sameExceptUnknown(v, sv) {
				return false
			}
		}
		return true
	}
	return false // sets: elements with unknowns cannot be matched up
}

func (r *Resource[T, P]) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_" + r.spec.TypeName
}

func (r *Resource[T, P]) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attrs := map[string]schema.Attribute{
		"id": schema.StringAttribute{
			Computed:            true,
			MarkdownDescription: idDescription(r.spec.Kind),
			PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
		"name": schema.StringAttribute{
			Required:            true,
			MarkdownDescription: fmt.Sprintf("Name of the %s. Changing it replaces the object.", r.spec.Kind.Kind),
			PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			Validators:          []validator.String{validators.DNSSubdomain()},
		},
	}
	if r.spec.Kind.Namespaced {
		attrs["namespace"] = schema.StringAttribute{
			Required:            true,
			MarkdownDescription: fmt.Sprintf("Namespace of the %s. Changing it replaces the object.", r.spec.Kind.Kind),
			PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			Validators:          []validator.String{validators.DNSLabel()},
		}
	}
	attrs[acceptAttribute] = acceptSchema()
	for k, v := range r.spec.Attributes {
		attrs[k] = v
	}
	resp.Schema = schema.Schema{MarkdownDescription: r.spec.Description, Attributes: attrs, Blocks: map[string]schema.Block{
		timeoutsName: TimeoutsBlock(ctx, r.spec.Kind.Kind, r.spec.ApplyTimeout, r.deleteTimeout())}}
}

func idDescription(k kube.Kind) string {
	if k.Namespaced {
		return "`namespace/name` of the object; also the import ID."
	}
	return "Name of the object; also the import ID."
}

func (r *Resource[T, P]) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if req.ProviderData == nil {
		return
	}
	c, ok := req.ProviderData.(*kube.Client)
	if !ok {
		resp.Diagnostics.AddError("Unexpected provider data", fmt.Sprintf("expected *kube.Client, got %T", req.ProviderData))
		return
	}
	r.client = c
}

func (r *Resource[T, P]) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	if r.spec.Validate == nil {
		return
	}
	var m T
	// A configuration with values unknown until apply cannot be decoded yet; it is
	// validated again before the write, when everything is known.
	if d := req.Config.Get(ctx, &m); d.HasError() {
		return
	}
	resp.Diagnostics.Append(WithPaths(r.spec.Validate(&m))...)
}

// WithPaths puts the attribute path into each diagnostic's text: Terraform
// points at the whole resource block for values nested in lists, so the text
// is where the user learns which element is wrong. A text that already starts
// with its path is kept as it is.
func WithPaths(in diag.Diagnostics) diag.Diagnostics {
	out := make(diag.Diagnostics, 0, len(in))
	for _, d := range in {
		dp, ok := d.(diag.DiagnosticWithPath)
		if !ok || len(dp.Path().Steps()) == 0 || strings.HasPrefix(d.Detail(), dp.Path().String()+":") {
			out = append(out, d)
			continue
		}
		detail := dp.Path().String() + ": " + d.Detail()
		if d.Severity() == diag.SeverityError {
			out.AddAttributeError(dp.Path(), d.Summary(), detail)
		} else {
			out.AddAttributeWarning(dp.Path(), d.Summary(), detail)
		}
	}
	return out
}

func (r *Resource[T, P]) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	resp.Diagnostics.Append(r.write(ctx, "create", req.Plan, &resp.State)...)
}

func (r *Resource[T, P]) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	resp.Diagnostics.Append(r.write(ctx, "update", req.Plan, &resp.State)...)
}

// write applies the planned model and records what the server returned; op
// ("create" or "update") names the timeout AfterApply runs under.
func (r *Resource[T, P]) write(ctx context.Context, op string, plan tfsdk.Plan, state *tfsdk.State) diag.Diagnostics {
	var m T
	diags := plan.Get(ctx, &m)
	if diags.HasError() {
		return diags
	}
	if diags.Append(r.apply(ctx, &m)...); diags.HasError() {
		return diags
	}
	if r.spec.AfterApply != nil {
		wctx := ctx
		if r.spec.ApplyTimeout > 0 {
			legacy := types.StringNull()
			if r.spec.LegacyTimeout != nil {
				legacy = r.spec.LegacyTimeout(&m)
			}
			d, ds := OperationTimeout(ctx, P(&m).waitTimeouts(), op, legacy, r.spec.ApplyTimeout)
			diags.Append(ds...)
			var cancel context.CancelFunc
			wctx, cancel = WithBudget(ctx, op, d)
			defer cancel()
		}
		// Recorded even when the wait fails: the object exists, and
		// Terraform marks it tainted.
		diags.Append(r.spec.AfterApply(wctx, r.client, &m)...)
	}
	return append(diags, state.Set(ctx, &m)...)
}

// apply server-side applies m and reads the result back into m. (Terraform
// validates the configuration again during apply, with every value known, so
// Validate has already run on what is written.)
func (r *Resource[T, P]) apply(ctx context.Context, m *T) diag.Diagnostics {
	var diags diag.Diagnostics
	if r.client == nil {
		NotConnected(&diags, false)
		return diags
	}
	ref := P(m).ObjectRef()
	fields, force, err := r.toApply(ctx, m)
	if err != nil {
		diags.AddError(fmt.Sprintf("Reading %s %s failed", r.spec.Kind.Kind, ref), err.Error())
		return diags
	}
	live, err := r.client.ApplyForce(ctx, r.spec.Kind, kube.NewObject(r.spec.Kind, ref, fields), force)
	if err != nil {
		diags.AddError(fmt.Sprintf("Applying %s %s failed", r.spec.Kind.Kind, ref), err.Error())
		return diags
	}
	r.spec.Read(live.Object, m)
	P(m).SetObjectRef(ref)
	return diags
}

// toApply returns the fields an apply of m sends and whether it forces
// conflicts: m's fields, adjusted from the live object by Spec.BeforeApply
// (which may also ask for force), else the provider's force_conflicts.
func (r *Resource[T, P]) toApply(ctx context.Context, m *T) (fields map[string]any, force bool, err error) {
	fields = r.spec.Fields(m)
	force = r.client.ForceConflicts()
	if r.spec.BeforeApply == nil {
		return fields, force, nil
	}
	ref := P(m).ObjectRef()
	current := func() (map[string]any, error) {
		obj, found, err := r.client.Get(ctx, r.spec.Kind, ref)
		if err != nil || !found {
			return nil, err
		}
		return obj.Object, nil
	}
	forced, err := r.spec.BeforeApply(ctx, m, fields, current)
	return fields, forced || force, err
}

func (r *Resource[T, P]) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m T
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if r.client == nil {
		NotConnected(&resp.Diagnostics, true)
		return
	}
	ref := P(&m).ObjectRef()
	live, found, err := r.client.Read(ctx, r.spec.Kind, ref)
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Reading %s %s failed", r.spec.Kind.Kind, ref), err.Error())
		return
	}
	if !found {
		// Deleted out of band: forget it so the plan creates it again.
		resp.State.RemoveResource(ctx)
		return
	}
	r.spec.Read(live.Object, &m)
	P(&m).SetObjectRef(ref)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *Resource[T, P]) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m T
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if r.client == nil {
		NotConnected(&resp.Diagnostics, false)
		return
	}
	d, ds := TimeoutFor(ctx, P(&m).waitTimeouts(), "delete", r.deleteTimeout())
	resp.Diagnostics.Append(ds...)
	ctx, cancel := WithBudget(ctx, "delete", d)
	defer cancel()
	ref := P(&m).ObjectRef()
	if err := r.client.Delete(ctx, r.spec.Kind, ref); err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Deleting %s %s failed", r.spec.Kind.Kind, ref), r.deleteError(ctx, ref, err))
	}
}

func (r *Resource[T, P]) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	ImportRef(ctx, req, resp, r.spec.Kind.Namespaced)
	if ref, err := kube.ParseImportID(req.ID, r.spec.Kind.Namespaced); err == nil && !resp.Diagnostics.HasError() {
		r.warnImport(ctx, ref, resp)
	}
}

// ImportRef imports by "name" or, when namespaced, "namespace/name": it sets
// id, name and namespace in the imported state, which Read then fills in.
// Every resource that imports a Kubernetes object by its name uses it.
func ImportRef(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse, namespaced bool) {
	ref, err := kube.ParseImportID(req.ID, namespaced)
	if err != nil {
		resp.Diagnostics.AddError("Invalid import ID", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), ref.String())...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), ref.Name)...)
	if namespaced {
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), ref.Namespace)...)
	}
}
