package training

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// The runtime is one of two kinds, chosen by namespace: the generic object
// path (object.Spec) serves each kind, and runtimeResource hands every
// request to the one its namespace names. The schema is the cluster kind's
// with namespace optional (runtimeAttributes).

type objectResource interface {
	resource.ResourceWithConfigure
	resource.ResourceWithImportState
	resource.ResourceWithValidateConfig
	resource.ResourceWithModifyPlan
}

type runtimeResource struct {
	cluster, namespaced objectResource
}

var (
	_ resource.ResourceWithConfigure      = (*runtimeResource)(nil)
	_ resource.ResourceWithImportState    = (*runtimeResource)(nil)
	_ resource.ResourceWithValidateConfig = (*runtimeResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*runtimeResource)(nil)
)

// pick is the kind's resource: namespaced when namespace is set or unknown.
func (r *runtimeResource) pick(ctx context.Context, get func(context.Context, path.Path, any) error) objectResource {
	var ns types.String
	if err := get(ctx, path.Root("namespace"), &ns); err == nil && ns.IsNull() {
		return r.cluster
	}
	return r.namespaced
}

func fromPlan(p tfsdk.Plan) func(context.Context, path.Path, any) error {
	return func(ctx context.Context, at path.Path, v any) error {
		if d := p.GetAttribute(ctx, at, v); d.HasError() {
			return errDecode
		}
		return nil
	}
}

func fromState(s tfsdk.State) func(context.Context, path.Path, any) error {
	return func(ctx context.Context, at path.Path, v any) error {
		if d := s.GetAttribute(ctx, at, v); d.HasError() {
			return errDecode
		}
		return nil
	}
}

func fromConfig(c tfsdk.Config) func(context.Context, path.Path, any) error {
	return func(ctx context.Context, at path.Path, v any) error {
		if d := c.GetAttribute(ctx, at, v); d.HasError() {
			return errDecode
		}
		return nil
	}
}

type decodeError struct{}

func (decodeError) Error() string { return "cannot decode the namespace" }

var errDecode error = decodeError{}

func (r *runtimeResource) Metadata(ctx context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	r.cluster.Metadata(ctx, req, resp)
}

func (r *runtimeResource) Schema(ctx context.Context, req resource.SchemaRequest, resp *resource.SchemaResponse) {
	r.cluster.Schema(ctx, req, resp)
}

func (r *runtimeResource) Configure(ctx context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.cluster.Configure(ctx, req, resp)
	r.namespaced.Configure(ctx, req, resp)
}

func (r *runtimeResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	r.pick(ctx, fromConfig(req.Config)).ValidateConfig(ctx, req, resp)
}

func (r *runtimeResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // a destroy
	}
	r.pick(ctx, fromPlan(req.Plan)).ModifyPlan(ctx, req, resp)
}

func (r *runtimeResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	r.pick(ctx, fromPlan(req.Plan)).Create(ctx, req, resp)
}

func (r *runtimeResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	r.pick(ctx, fromPlan(req.Plan)).Update(ctx, req, resp)
}

func (r *runtimeResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	r.pick(ctx, fromState(req.State)).Read(ctx, req, resp)
}

func (r *runtimeResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	r.pick(ctx, fromState(req.State)).Delete(ctx, req, resp)
}

// ImportState: "name" imports a ClusterTrainingRuntime, "namespace/name" a
// TrainingRuntime.
func (r *runtimeResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if strings.Contains(req.ID, "/") {
		r.namespaced.ImportState(ctx, req, resp)
		return
	}
	r.cluster.ImportState(ctx, req, resp)
}
