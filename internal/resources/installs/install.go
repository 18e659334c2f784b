// Package installs holds the resources that install controllers into the
// cluster. They are configurations of one install engine (install.go),
// which plans, applies, refreshes, imports and destroys an install the same
// way whatever it is installed from: settings-only changes (timeouts,
// remove_crds) that touch nothing in the cluster, replacement when the
// namespace or name changes (replaces.go), the conflict rules, drift at
// every refresh, and the not-connected and timeout handling. Two back ends
// do the cluster work:
//
//   - release.go, a Helm release (internal/helm): aiplatform_kueue
//     (kueue.go, kueue_settings.go), aiplatform_volcano, aiplatform_kuberay_operator,
//     aiplatform_lws_controller, aiplatform_jobset_controller,
//     aiplatform_trainer (trainer.go: with its default runtimes as hooks) and
//     aiplatform_kserve (kserve.go, kserve_llmisvc.go); move.go adopts
//     hashicorp/helm's helm_release state;
//   - manifests.go, a manifest set (internal/manifests): aiplatform_mpi_operator
//     (mpi_operator.go), the MPI Operator's release file.
//
// The Helm work and each chart's knowledge (defaults, configuration type,
// values paths, conflict rules) are in internal/helm; a resource file here
// only maps its Terraform model to and from that configuration. Each
// install records itself in the run's plan registry (internal/planned)
// through the conflict rules, where the checks of other resources
// (internal/rules: a runtime's gang against Kueue's integrations) read it.
package installs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/rules"
)

// installModel is the attributes every install has, embedded in each
// install resource's model.
type installModel struct {
	ID         types.String `tfsdk:"id"`
	Namespace  types.String `tfsdk:"namespace"`
	Version    types.String `tfsdk:"version"`
	Timeout    types.String `tfsdk:"timeout"`
	RemoveCRDs types.Bool   `tfsdk:"remove_crds"`
	Drift      types.List   `tfsdk:"drift"`
	// Timeouts bounds each whole operation (every release of an install
	// and its readiness wait); the deprecated Timeout fills in what it
	// leaves unset.
	Timeouts timeouts.Value `tfsdk:"timeouts"`
}

func (m *installModel) install() *installModel { return m }

// model is an install resource's model.
type model[T any] interface {
	*T
	install() *installModel
}

// backend is what an install is installed from: it does the cluster work
// the engine asks for. m is always the model of the install at hand.
type backend[T any] interface {
	// configure gives the back end the provider's client.
	configure(c *kube.Client)
	// schema is the back end's attributes and what the timeouts block
	// names.
	schema() (attrs map[string]schema.Attribute, timeoutsOf string)
	// validate checks m's configuration without I/O.
	validate(m *T, diags *diag.Diagnostics)
	// install is the install as the conflict rules see it, and whether all
	// they read is known (false leaves the rules to the apply).
	install(m *T) (in helm.Install, known bool)
	// name is the install's name; fixed, when it is not an attribute
	// (then the namespace alone is the ID, else "namespace/name").
	name(m *T) (name types.String, fixed bool)
	// plan does the back end's part of a plan (cfg: the configuration).
	plan(ctx context.Context, cfg tfsdk.Config, m *T) diag.Diagnostics
	// source checks, at plan, what an apply of m will read (a local
	// chart's version); called only when the plan applies m.
	source(m *T) diag.Diagnostics
	// upgrade judges a planned change of version from prior's to m's:
	// what it changes for users (warnings) and the paths upstream forbids
	// (errors naming the safe path).
	upgrade(ctx context.Context, m, prior *T) diag.Diagnostics
	// same reports whether the plan m applies what prior has applied
	// (plan, state and config are the raw values).
	same(plan, state, config tftypes.Value, m, prior *T) bool
	// keep is the model planned and recorded when m applies what prior
	// has applied and nothing drifted: no cluster operation.
	keep(m, prior *T) *T
	// changed plans m's computed attributes for an install (create) or an
	// apply over the existing one.
	changed(m *T, create bool)
	// apply installs (or, update, upgrades) m and sets its computed
	// attributes.
	apply(ctx context.Context, cfg tfsdk.Config, m *T, update bool) diag.Diagnostics
	// read refreshes m from the cluster (importing: m has only its ID
	// attributes): found is false when the install is gone.
	read(ctx context.Context, m *T, importing bool) (found bool, diags diag.Diagnostics)
	// uninstall removes m.
	uninstall(ctx context.Context, m *T) diag.Diagnostics
	// importState sets the attributes the import ID names.
	importState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse)
}

// hooks are a configuration's work around the back end's (the Trainer's
// default runtimes). Each is optional.
type hooks[T any] struct {
	// Check runs before every apply that may change the cluster.
	Check func(m *T) diag.Diagnostics
	// After runs after an apply (prior nil on create), with the state
	// recorded.
	After func(ctx context.Context, c *kube.Client, m, prior *T) diag.Diagnostics
	// Refresh runs after a read that found the install.
	Refresh func(ctx context.Context, c *kube.Client, m *T, importing bool) diag.Diagnostics
	// BeforeDelete runs before the uninstall.
	BeforeDelete func(ctx context.Context, c *kube.Client, m *T) diag.Diagnostics
}

// installResource is the engine: one install resource, configured by its
// type name, description, own attributes and validation, hooks and back end.
type installResource[T any, P model[T]] struct {
	typeName, description string
	attributes            map[string]schema.Attribute
	validateFn            func(m *T) diag.Diagnostics
	hooks                 hooks[T]
	// subject names the install in messages ("Kueue", "the MPI Operator").
	subject string
	backend backend[T]
	client  *kube.Client
}

var (
	_ resource.ResourceWithConfigure      = (*installResource[kueueModel, *kueueModel])(nil)
	_ resource.ResourceWithModifyPlan     = (*installResource[kueueModel, *kueueModel])(nil)
	_ resource.ResourceWithImportState    = (*installResource[kueueModel, *kueueModel])(nil)
	_ resource.ResourceWithValidateConfig = (*installResource[kueueModel, *kueueModel])(nil)
)

const defaultTimeout = 10 * time.Minute

func (r *installResource[T, P]) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_" + r.typeName
}

func (r *installResource[T, P]) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attrs, of := r.backend.schema()
	attrs["timeout"] = object.LegacyTimeout(defaultTimeout.String(), "an install, upgrade or uninstall, including the wait until every object is ready,")
	for k, v := range r.attributes {
		attrs[k] = v
	}
	resp.Schema = schema.Schema{MarkdownDescription: r.description, Attributes: attrs, Blocks: map[string]schema.Block{
		"timeouts": object.TimeoutsBlock(ctx, of, defaultTimeout, defaultTimeout)}}
}

func (r *installResource[T, P]) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if c, ok := req.ProviderData.(*kube.Client); ok {
		r.client = c
		r.backend.configure(c)
	}
}

func (r *installResource[T, P]) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m T
	if d := req.Config.Get(ctx, &m); d.HasError() {
		return
	}
	r.backend.validate(&m, &resp.Diagnostics)
	if r.validateFn != nil {
		resp.Diagnostics.Append(r.validateFn(&m)...)
	}
}

// notConnected reports a resource without a client (the connection is
// known only after apply); a refresh keeps the recorded state.
func (r *installResource[T, P]) notConnected(diags *diag.Diagnostics, reading bool) bool {
	if r.client == nil {
		object.NotConnected(diags, reading)
		return true
	}
	return false
}

func (r *installResource[T, P]) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	var m T
	if d := req.Plan.Get(ctx, &m); d.HasError() {
		return // values unknown until apply: checked at apply
	}
	f := P(&m).install()
	name, fixed := r.backend.name(&m)
	stateName, id := "", f.Namespace.ValueString()+"/"+name.ValueString()
	if fixed {
		stateName = name.ValueString()
	}
	if !f.Namespace.IsUnknown() && !name.IsUnknown() {
		f.ID = types.StringValue(id)
		if fixed {
			f.ID = f.Namespace
		}
	}
	if resp.Diagnostics.Append(r.backend.plan(ctx, req.Config, &m)...); resp.Diagnostics.HasError() {
		return
	}
	if r.client != nil {
		var replaces string
		if object.Known(f.Namespace) && object.Known(name) {
			var d diag.Diagnostics
			replaces, d = replacedID(ctx, r.client, req.State, id, stateName)
			if resp.Diagnostics.Append(d...); d.HasError() {
				return
			}
		}
		if resp.Diagnostics.Append(r.checkConflicts(ctx, &m, replaces)...); resp.Diagnostics.HasError() {
			return
		}
	}
	if req.State.Raw.IsNull() {
		if resp.Diagnostics.Append(r.backend.source(&m)...); resp.Diagnostics.HasError() {
			return
		}
		f.Drift = emptyList()
		r.backend.changed(&m, true)
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &m)...)
		return
	}
	var prior T
	if resp.Diagnostics.Append(req.State.Get(ctx, &prior)...); resp.Diagnostics.HasError() {
		return
	}
	if resp.Diagnostics.Append(r.backend.upgrade(ctx, &m, &prior)...); resp.Diagnostics.HasError() {
		return
	}
	if len(P(&prior).install().Drift.Elements()) == 0 && r.backend.same(req.Plan.Raw, req.State.Raw, req.Config.Raw, &m, &prior) {
		// Nothing to apply, or only how long operations wait or what a
		// destroy removes: the install stays as it is, and so does
		// everything read from it.
		resp.Diagnostics.Append(resp.Plan.Set(ctx, r.backend.keep(&m, &prior))...)
		return
	}
	// The configuration changed (the framework then planned the computed
	// attributes unknown), or the cluster drifted from the install.
	if resp.Diagnostics.Append(r.backend.source(&m)...); resp.Diagnostics.HasError() {
		return
	}
	f.Drift = emptyList()
	r.backend.changed(&m, false)
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &m)...)
}

// settings are the attributes that change nothing in the cluster: how long
// operations wait, and what a destroy removes.
var settings = map[string]bool{"timeouts": true, "timeout": true, "remove_crds": true}

// settingsOnly reports whether plan differs from state in settings alone.
// An attribute the plan has unknown while the configuration leaves it
// null is one the framework marked unknown because something changed (a
// computed attribute: drift, revision, …), not a change of its own.
func settingsOnly(plan, state, config tftypes.Value) bool {
	var p, s, c map[string]tftypes.Value
	if plan.As(&p) != nil || state.As(&s) != nil || config.As(&c) != nil {
		return false
	}
	for name, pv := range p {
		if settings[name] || pv.Equal(s[name]) {
			continue
		}
		if cv, ok := c[name]; !pv.IsKnown() && ok && cv.IsNull() {
			continue
		}
		return false
	}
	return true
}

// keepSettings copies the settings of plan into prior, the model that is
// planned (and recorded) when nothing else changes.
func keepSettings(prior, plan *installModel) {
	prior.Timeout, prior.Timeouts, prior.RemoveCRDs = plan.Timeout, plan.Timeouts, plan.RemoveCRDs
}

// checkConflicts runs the conflict rules (helm.CheckConflicts) for the
// install as m plans it, at plan and at apply time. r.client is set.
//
// replaces is the ID of the install this plan replaces (a changed namespace
// or name), which the rules do not hold against it; "" for none.
func (r *installResource[T, P]) checkConflicts(ctx context.Context, m *T, replaces string) diag.Diagnostics {
	var diags diag.Diagnostics
	in, known := r.backend.install(m)
	if !known {
		return diags
	}
	in.Replaces = replaces
	conflict, err := helm.CheckConflicts(ctx, r.client, in)
	switch {
	case err != nil:
		diags.AddError(fmt.Sprintf("Cannot check %s against the cluster", r.subject), err.Error())
	case conflict != nil:
		diags.AddError(conflict.Summary, conflict.Detail)
	default:
		// The checks of other resources that read this install (a
		// runtime's gang against Kueue's integrations).
		diags.Append(rules.Plan(ctx, r.client, in)...)
	}
	return diags
}

func emptyList() types.List { return types.ListValueMust(types.StringType, []attr.Value{}) }

func stringList(lines []string) types.List {
	vals := make([]attr.Value, len(lines))
	for i, l := range lines {
		vals[i] = types.StringValue(l)
	}
	return types.ListValueMust(types.StringType, vals)
}

// withTimeout bounds ctx by the time operation op ("create", "update",
// "delete") may take under f: timeouts, else the deprecated timeout. The
// back ends' waits take theirs from it (object.Budget).
func withTimeout(ctx context.Context, f *installModel, op string, diags *diag.Diagnostics) (context.Context, context.CancelFunc) {
	d, ds := object.OperationTimeout(ctx, f.Timeouts, op, f.Timeout, defaultTimeout)
	diags.Append(ds...)
	return object.WithBudget(ctx, op, d)
}

// opTimeout is how long one back-end operation under ctx may wait: what is
// left of the operation's budget.
func opTimeout(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left > 0 {
			return left
		}
		return time.Second // the deadline is here: the back end fails at once, naming it
	}
	return defaultTimeout
}

// failed is an apply's or destroy's error about the install: when the
// operation ran out of its time, which timeout that was and how to raise it.
func failed(ctx context.Context, diags *diag.Diagnostics, summary string, err error) {
	msg := err.Error()
	if object.OutOfTime(ctx, err) {
		msg += fmt.Sprintf(" — not done within %s. %s", object.Budget(ctx, defaultTimeout), object.TimeoutHint(ctx))
	}
	diags.AddError(summary, msg)
}

func (r *installResource[T, P]) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m T
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	r.write(ctx, req.Config, &m, nil, nil, &resp.State, &resp.Diagnostics)
}

func (r *installResource[T, P]) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m, prior T
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	same := func() bool { return r.backend.same(req.Plan.Raw, req.State.Raw, req.Config.Raw, &m, &prior) }
	r.write(ctx, req.Config, &m, &prior, same, &resp.State, &resp.Diagnostics)
}

// write installs m (prior nil) or applies it over prior, unless same says
// that nothing in the cluster changes, and records it in state.
func (r *installResource[T, P]) write(ctx context.Context, cfg tfsdk.Config, m, prior *T, same func() bool, state *tfsdk.State, diags *diag.Diagnostics) {
	if diags.HasError() || r.notConnected(diags, false) {
		return
	}
	if r.hooks.Check != nil {
		if diags.Append(r.hooks.Check(m)...); diags.HasError() {
			return
		}
	}
	op := "create"
	if prior != nil {
		op = "update"
	}
	ctx, cancel := withTimeout(ctx, P(m).install(), op, diags)
	defer cancel()
	if prior != nil && len(P(prior).install().Drift.Elements()) == 0 && same() {
		// No back-end operation: nothing in the cluster changes.
		diags.Append(state.Set(ctx, r.backend.keep(m, prior))...)
	} else if diags.Append(r.checkConflicts(ctx, m, "")...); !diags.HasError() {
		if diags.Append(r.backend.apply(ctx, cfg, m, prior != nil)...); !diags.HasError() {
			diags.Append(state.Set(ctx, m)...)
		}
	}
	r.after(ctx, m, prior, diags)
}

// after runs the After hook once the install is in place and recorded.
func (r *installResource[T, P]) after(ctx context.Context, m, prior *T, diags *diag.Diagnostics) {
	if r.hooks.After != nil && !diags.HasError() {
		diags.Append(r.hooks.After(ctx, r.client, m, prior)...)
	}
}

func (r *installResource[T, P]) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m T
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || r.notConnected(&resp.Diagnostics, true) {
		return
	}
	importing := P(&m).install().Version.IsNull()
	found, diags := r.backend.read(ctx, &m, importing)
	if resp.Diagnostics.Append(diags...); diags.HasError() {
		return
	}
	if !found {
		resp.State.RemoveResource(ctx) // uninstalled out of band: plan installs again
		return
	}
	if r.hooks.Refresh != nil {
		if resp.Diagnostics.Append(r.hooks.Refresh(ctx, r.client, &m, importing)...); resp.Diagnostics.HasError() {
			return
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *installResource[T, P]) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m T
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || r.notConnected(&resp.Diagnostics, false) {
		return
	}
	ctx, cancel := withTimeout(ctx, P(&m).install(), "delete", &resp.Diagnostics)
	defer cancel()
	if r.hooks.BeforeDelete != nil {
		if resp.Diagnostics.Append(r.hooks.BeforeDelete(ctx, r.client, &m)...); resp.Diagnostics.HasError() {
			return
		}
	}
	resp.Diagnostics.Append(r.backend.uninstall(ctx, &m)...)
}

func (r *installResource[T, P]) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	r.backend.importState(ctx, req, resp)
}

// ---- validators ----------------------------------------------------------

type nonEmpty struct{}

func (nonEmpty) Description(context.Context) string         { return "must not be empty" }
func (nonEmpty) MarkdownDescription(context.Context) string { return "must not be empty" }
func (nonEmpty) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if !req.ConfigValue.IsNull() && !req.ConfigValue.IsUnknown() && strings.TrimSpace(req.ConfigValue.ValueString()) == "" {
		resp.Diagnostics.AddAttributeError(req.Path, "Empty value", req.Path.String()+" must not be empty")
	}
}
