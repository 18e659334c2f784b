package object

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// A resource whose object is one of two kinds chosen by namespace — a
// cluster-scoped kind (ClusterTrainingRuntime, ClusterServingRuntime), or
// its namespaced twin when the optional attribute namespace is set. The
// generic path serves each kind; Scoped hands every request to the one the
// namespace names. The model carries its own id/name/namespace (namespace
// null for the cluster kind) and the cluster Spec's Attributes declare
// namespace as an optional attribute that requires replacement.

type scopedPart interface {
	resource.ResourceWithConfigure
	resource.ResourceWithImportState
	resource.ResourceWithValidateConfig
	resource.ResourceWithModifyPlan
}

// Scoped is the resource NewScoped returns; a resource that adds to it
// (an import that warns) embeds it.
type Scoped struct {
	cluster, namespaced scopedPart
}

var (
	_ resource.ResourceWithConfigure      = (*Scoped)(nil)
	_ resource.ResourceWithImportState    = (*Scoped)(nil)
	_ resource.ResourceWithValidateConfig = (*Scoped)(nil)
	_ resource.ResourceWithModifyPlan     = (*Scoped)(nil)
)

// NewScoped returns the resource of cluster (a Spec of the cluster-scoped
// kind) that becomes namespaced.Kind's object when namespace is set; the
// two specs differ only in Kind.
func NewScoped[T any, P Model[T]](cluster Spec[T], namespaced Spec[T]) *Scoped {
	return &Scoped{cluster: New[T, P](cluster).(scopedPart), namespaced: New[T, P](namespaced).(scopedPart)}
}

type getter func(context.Context, path.Path, any) diagLike

type diagLike interface{ HasError() bool }

// pick is the kind's resource: namespaced when namespace is set or unknown.
func (r *Scoped) pick(ctx context.Context, get getter) scopedPart {
	var ns types.String
	if d := get(ctx, path.Root("namespace"), &ns); !d.HasError() && ns.IsNull() {
		return r.cluster
	}
	return r.namespaced
}

func planGetter(p tfsdk.Plan) getter {
	return func(ctx context.Context, at path.Path, v any) diagLike { return p.GetAttribute(ctx, at, v) }
}

func stateGetter(s tfsdk.State) getter {
	return func(ctx context.Context, at path.Path, v any) diagLike { return s.GetAttribute(ctx, at, v) }
}

func configGetter(c tfsdk.Config) getter {
	return func(ctx context.Context, at path.Path, v any) diagLike { return c.GetAttribute(ctx, at, v) }
}

func (r *Scoped) Metadata(ctx context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	r.cluster.Metadata(ctx, req, resp)
}

func (r *Scoped) Schema(ctx context.Context, req resource.SchemaRequest, resp *resource.SchemaResponse) {
	r.cluster.Schema(ctx, req, resp)
}

func (r *Scoped) Configure(ctx context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.cluster.Configure(ctx, req, resp)
	r.namespaced.Configure(ctx, req, resp)
}

func (r *Scoped) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	r.pick(ctx, configGetter(req.Config)).ValidateConfig(ctx, req, resp)
}

func (r *Scoped) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // a destroy
	}
	r.pick(ctx, planGetter(req.Plan)).ModifyPlan(ctx, req, resp)
}

func (r *Scoped) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	r.pick(ctx, planGetter(req.Plan)).Create(ctx, req, resp)
}

func (r *Scoped) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	r.pick(ctx, planGetter(req.Plan)).Update(ctx, req, resp)
}

func (r *Scoped) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	r.pick(ctx, stateGetter(req.State)).Read(ctx, req, resp)
}

func (r *Scoped) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	r.pick(ctx, stateGetter(req.State)).Delete(ctx, req, resp)
}

// ImportState: "name" imports the cluster kind, "namespace/name" the
// namespaced one.
func (r *Scoped) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if strings.Contains(req.ID, "/") {
		r.namespaced.ImportState(ctx, req, resp)
		return
	}
	r.cluster.ImportState(ctx, req, resp)
}
