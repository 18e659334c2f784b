// Package installs holds the resources that install controllers into the
// cluster: the Helm releases aiplatform_kueue, aiplatform_volcano,
// aiplatform_kuberay_operator, aiplatform_lws_controller,
// aiplatform_jobset_controller, aiplatform_trainer and aiplatform_kserve (one
// generic release resource, release.go, configured per chart), and
// aiplatform_mpi_operator, a manifest set (internal/manifests). The Helm work
// and each chart's knowledge (defaults, configuration type, values paths,
// conflict rules) are in internal/helm; a resource file here only maps its
// Terraform model to and from that chart's configuration type. Each install
// records itself in the run's plan registry (internal/planned) through the
// conflict rules, where the checks of other resources (internal/rules: a
// runtime's gang against Kueue's integrations) read it.
package installs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/rules"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// releaseModel is what every install resource has.
type releaseModel struct {
	ID         types.String `tfsdk:"id"`
	Name       types.String `tfsdk:"name"`
	Namespace  types.String `tfsdk:"namespace"`
	Version    types.String `tfsdk:"version"`
	Chart      *chartModel  `tfsdk:"chart"`
	Values     types.String `tfsdk:"values"`
	Timeout    types.String `tfsdk:"timeout"`
	RemoveCRDs types.Bool   `tfsdk:"remove_crds"`
	Drift      types.List   `tfsdk:"drift"`
	Revision   types.Int64  `tfsdk:"revision"`
	Status     types.String `tfsdk:"status"`
	// Timeouts bounds each whole operation (every release of an install
	// and its readiness wait); the deprecated Timeout fills in what it
	// leaves unset.
	Timeouts timeouts.Value `tfsdk:"timeouts"`
}

func (m *releaseModel) release() *releaseModel { return m }

type chartModel struct {
	Repository types.String `tfsdk:"repository"`
	Name       types.String `tfsdk:"name"`
	Path       types.String `tfsdk:"path"`
}

// model is a resource model that embeds releaseModel.
type model[T any] interface {
	*T
	release() *releaseModel
}

// chartSpec is everything that differs between two install resources.
type chartSpec[T any] struct {
	TypeName    string // without the provider prefix
	Description string
	// Chart is the chart's product name, default source and version (empty:
	// version is required), release name and namespace.
	Chart      helm.Chart
	Attributes map[string]schema.Attribute
	// Config is the chart's typed configuration as m sets it (nil, or Config
	// nil: the user's values alone), and whether it is known: false while an
	// attribute the conflict rules read is unknown at plan time, which
	// leaves the rules to the apply.
	Config func(m *T) (cfg helm.Config, known bool)
	// FromValues sets the typed attributes from a release's values (import).
	FromValues func(values map[string]any, m *T)
	// Validate checks the configuration without I/O.
	Validate func(m *T) diag.Diagnostics
	// Load, when set, loads the chart from src instead of helm.LoadChart
	// (aiplatform_kserve adds KServe's CRD charts as subcharts).
	Load func(src helm.Source, m *T) (*chart.Chart, error)
	// Omit are API groups of rendered objects the release leaves out
	// (helm.Options.Omit).
	Omit func(m *T) []string
	// Prepare runs before every install or upgrade, Finish after it
	// (aiplatform_kserve: its webhook certificate, then the CA in its
	// webhooks, as cert-manager would).
	Prepare, Finish func(ctx context.Context, c *kube.Client, m *T) error
	// Drift is drift outside the release's objects, added to `drift` at
	// every refresh.
	Drift func(ctx context.Context, c *kube.Client, m *T) ([]string, error)
	// Cleanup runs after the release is uninstalled (destroy).
	Cleanup func(ctx context.Context, c *kube.Client, m *T) error
}

type releaseResource[T any, P model[T]] struct {
	spec   chartSpec[T]
	client *kube.Client
}

func newRelease[T any, P model[T]](spec chartSpec[T]) resource.Resource {
	return &releaseResource[T, P]{spec: spec}
}

var (
	_ resource.ResourceWithConfigure      = (*releaseResource[kueueModel, *kueueModel])(nil)
	_ resource.ResourceWithModifyPlan     = (*releaseResource[kueueModel, *kueueModel])(nil)
	_ resource.ResourceWithImportState    = (*releaseResource[kueueModel, *kueueModel])(nil)
	_ resource.ResourceWithValidateConfig = (*releaseResource[kueueModel, *kueueModel])(nil)
)

const defaultTimeout = 10 * time.Minute

func (r *releaseResource[T, P]) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_" + r.spec.TypeName
}

func (r *releaseResource[T, P]) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	s, ch := r.spec, r.spec.Chart
	defaultChart := fmt.Sprintf("`{ repository = %q, name = %q }`", ch.Default.Repository, ch.Default.Name)
	version := schema.StringAttribute{
		MarkdownDescription: fmt.Sprintf("Version of the %s chart. Changing it upgrades the release.", ch.Product),
		Validators:          []validator.String{nonEmpty{}},
	}
	if ch.Default.Version != "" {
		version.Optional, version.Computed = true, true
		version.Default = stringdefault.StaticString(ch.Default.Version)
		version.MarkdownDescription += fmt.Sprintf(" Default `%q`.", ch.Default.Version)
	} else {
		version.Required = true
	}
	attrs := map[string]schema.Attribute{
		"id": schema.StringAttribute{Computed: true, MarkdownDescription: "`namespace/name` of the release; also the import ID.",
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
		"name": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(ch.Release),
			MarkdownDescription: fmt.Sprintf("Name of the Helm release. Default `%q`. Changing it replaces the release.", ch.Release),
			Validators:          []validator.String{validators.DNSLabel()},
			PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()}},
		"namespace": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(ch.Namespace),
			MarkdownDescription: fmt.Sprintf("Namespace of the release, created when missing. Default `%q`. Changing it replaces the release.", ch.Namespace),
			Validators:          []validator.String{validators.DNSLabel()},
			PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()}},
		"version": version,
		"chart": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: fmt.Sprintf("Where the chart comes from: `repository` and `name` (a chart repository URL, or an `oci://` "+
				"repository whose chart reference is `repository/name`), or `path`, a local chart directory. Default %s.", defaultChart),
			Attributes: map[string]schema.Attribute{
				"repository": schema.StringAttribute{Optional: true, MarkdownDescription: "Chart repository URL (`https://…` serving `index.yaml`) or OCI repository (`oci://…`)."},
				"name":       schema.StringAttribute{Optional: true, MarkdownDescription: "Chart name in the repository."},
				"path":       schema.StringAttribute{Optional: true, MarkdownDescription: "Local chart directory (or `.tgz`); its version must equal `version`."},
			}},
		"values": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Further chart values as a YAML document, merged over the chart's defaults. The typed attributes win over it."},
		"timeout": object.LegacyTimeout(defaultTimeout.String(), "an install, upgrade or uninstall, including the wait until every object is ready,"),
		"remove_crds": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			MarkdownDescription: "Delete the chart's CRDs — and with them every object of those kinds — when the release is destroyed. Default `false`: the CRDs stay."},
		"drift": schema.ListAttribute{ElementType: types.StringType, Computed: true,
			MarkdownDescription: "Fields of the release's objects that differ in the cluster from what the release applied, as " +
				"`Kind/namespace/name: field live → release`, computed at every refresh by a dry-run server-side apply of each object. " +
				"Any drift plans an update that applies the release again and puts the fields back; the plan shows it as `drift` becoming `[]`."},
		"revision": schema.Int64Attribute{Computed: true, MarkdownDescription: "Revision of the Helm release."},
		"status":   schema.StringAttribute{Computed: true, MarkdownDescription: "Status of the release's latest revision (`deployed` after a successful apply)."},
	}
	for k, v := range s.Attributes {
		attrs[k] = v
	}
	resp.Schema = schema.Schema{MarkdownDescription: s.Description, Attributes: attrs, Blocks: map[string]schema.Block{
		"timeouts": object.TimeoutsBlock(ctx, ch.Product+" release", defaultTimeout, defaultTimeout)}}
}

func (r *releaseResource[T, P]) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if c, ok := req.ProviderData.(*kube.Client); ok {
		r.client = c
	}
}

func (r *releaseResource[T, P]) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m T
	if d := req.Config.Get(ctx, &m); d.HasError() {
		return
	}
	b := P(&m).release()
	if c := b.Chart; c != nil {
		hasPath := !c.Path.IsNull()
		hasRepo := !c.Repository.IsNull() || !c.Name.IsNull()
		switch {
		case hasPath && hasRepo:
			resp.Diagnostics.AddAttributeError(path.Root("chart"), "Conflicting chart source",
				"chart: set either path, or repository and name, not both.")
		case !hasPath && (c.Repository.IsNull() || c.Name.IsNull()) && !c.Repository.IsUnknown() && !c.Name.IsUnknown():
			resp.Diagnostics.AddAttributeError(path.Root("chart"), "Incomplete chart source",
				"chart: a repository source needs both repository and name (or set path to a local chart).")
		}
	}
	if !b.Values.IsNull() && !b.Values.IsUnknown() {
		if _, err := helm.ParseValues(b.Values.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("values"), "Invalid values", "values: "+err.Error())
		}
	}
	if r.spec.Validate != nil {
		resp.Diagnostics.Append(r.spec.Validate(&m)...)
	}
}

func (r *releaseResource[T, P]) notConfigured(diags *diag.Diagnostics) bool {
	return r.notConnected(diags, false)
}

// notConnected reports a resource without a client (the connection is
// known only after apply); a refresh keeps the recorded state.
func (r *releaseResource[T, P]) notConnected(diags *diag.Diagnostics, reading bool) bool {
	if r.client == nil {
		object.NotConnected(diags, reading)
		return true
	}
	return false
}

func (r *releaseResource[T, P]) handle(m *T) *helm.Release {
	b := P(m).release()
	return &helm.Release{
		Client: r.client, Namespace: b.Namespace.ValueString(), Name: b.Name.ValueString(),
	}
}

func (r *releaseResource[T, P]) withLogs(ctx context.Context, rel *helm.Release) *helm.Release {
	rel.Log = func(msg string) { tflog.Info(ctx, msg, map[string]any{"release": rel.ID()}) }
	rel.Debug = func(msg string) { tflog.Debug(ctx, "helm: "+msg, map[string]any{"release": rel.ID()}) }
	return rel
}

func (r *releaseResource[T, P]) source(b *releaseModel) helm.Source {
	src := r.spec.Chart.Default
	src.Version = b.Version.ValueString()
	if c := b.Chart; c != nil {
		if !c.Path.IsNull() {
			return helm.Source{Path: c.Path.ValueString(), Version: src.Version}
		}
		src.Repository, src.Name = c.Repository.ValueString(), c.Name.ValueString()
	}
	return src
}

func (r *releaseResource[T, P]) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	var m T
	if d := req.Plan.Get(ctx, &m); d.HasError() {
		return // values unknown until apply: checked at apply
	}
	b := P(&m).release()
	if !b.Namespace.IsUnknown() && !b.Name.IsUnknown() {
		b.ID = types.StringValue(b.Namespace.ValueString() + "/" + b.Name.ValueString())
	}
	if r.client != nil {
		var replaces string
		if object.Known(b.Namespace) && object.Known(b.Name) {
			var d diag.Diagnostics
			replaces, d = replacedID(ctx, r.client, req.State, b.ID.ValueString(), "")
			if resp.Diagnostics.Append(d...); d.HasError() {
				return
			}
		}
		if resp.Diagnostics.Append(r.checkConflicts(ctx, &m, replaces)...); resp.Diagnostics.HasError() {
			return
		}
	}
	if req.State.Raw.IsNull() {
		b.Drift = emptyList()
		b.Revision, b.Status = types.Int64Unknown(), types.StringUnknown()
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &m)...)
		return
	}
	var prior T
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	pb := P(&prior).release()
	if len(pb.Drift.Elements()) == 0 && !req.Plan.Raw.Equal(req.State.Raw) && settingsOnly(req.Plan.Raw, req.State.Raw, req.Config.Raw) {
		// Only how long operations wait, or what a destroy removes: the
		// release stays as it is, and so does everything read from it.
		keepSettings(P(&prior).release(), b)
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &prior)...)
		return
	}
	// The configuration changed (the framework then planned the computed
	// attributes unknown), or the cluster drifted from the release.
	if !req.Plan.Raw.Equal(req.State.Raw) || len(pb.Drift.Elements()) > 0 {
		b.Drift = emptyList()
		b.Revision, b.Status = types.Int64Unknown(), types.StringValue(release.StatusDeployed.String())
	}
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
func keepSettings(prior, plan *releaseModel) {
	prior.Timeout, prior.Timeouts, prior.RemoveCRDs = plan.Timeout, plan.Timeouts, plan.RemoveCRDs
}

// checkConflicts runs the conflict rules (helm.CheckConflicts) for the
// install as m plans it, at plan and at apply time. r.client is set.
//
// replaces is the ID of the release this plan replaces (a changed namespace
// or name), which the rules do not hold against it; "" for none.
func (r *releaseResource[T, P]) checkConflicts(ctx context.Context, m *T, replaces string) diag.Diagnostics {
	var diags diag.Diagnostics
	var cfg helm.Config
	if r.spec.Config != nil {
		var known bool
		if cfg, known = r.spec.Config(m); !known {
			return diags
		}
	}
	b := P(m).release()
	in := helm.Install{Chart: r.spec.Chart.Product, Namespace: b.Namespace.ValueString(), Name: b.Name.ValueString(), Config: cfg, Replaces: replaces}
	conflict, err := helm.CheckConflicts(ctx, r.client, in)
	switch {
	case err != nil:
		diags.AddError(fmt.Sprintf("Cannot check %s against the cluster", r.spec.Chart.Product), err.Error())
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

// values computes the chart values for m.
func (r *releaseResource[T, P]) values(m *T, ch *chart.Chart) (map[string]any, error) {
	raw, err := helm.ParseValues(P(m).release().Values.ValueString())
	if err != nil {
		return nil, err
	}
	var cfg helm.Config
	if r.spec.Config != nil {
		cfg, _ = r.spec.Config(m)
	}
	return helm.Values(cfg, ch.Values, raw)
}

// withTimeout bounds ctx by the time operation op ("create", "update",
// "delete") may take under b: timeouts, else the deprecated timeout. Helm's
// own waits take theirs from it (object.Budget).
func withTimeout(ctx context.Context, b *releaseModel, op string) (context.Context, context.CancelFunc, diag.Diagnostics) {
	d, diags := object.OperationTimeout(ctx, b.Timeouts, op, b.Timeout, defaultTimeout)
	ctx, cancel := object.WithBudget(ctx, op, d)
	return ctx, cancel, diags
}

// helmTimeout is how long one Helm operation under ctx may wait: what is
// left of the operation's budget.
func helmTimeout(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left > 0 {
			return left
		}
		return time.Second // the deadline is here: Helm fails at once, naming it
	}
	return defaultTimeout
}

// failed is an apply's or destroy's error about the release: when the
// operation ran out of its time, which timeout that was and how to raise it.
func failed(ctx context.Context, diags *diag.Diagnostics, summary string, err error) {
	msg := err.Error()
	if object.OutOfTime(ctx, err) {
		msg += fmt.Sprintf(" — not done within %s. %s", object.Budget(ctx, defaultTimeout), object.TimeoutHint(ctx))
	}
	diags.AddError(summary, msg)
}

func (r *releaseResource[T, P]) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m T
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || r.notConfigured(&resp.Diagnostics) {
		return
	}
	ctx, cancel, diags := withTimeout(ctx, P(&m).release(), "create")
	defer cancel()
	resp.Diagnostics.Append(diags...)
	resp.Diagnostics.Append(r.apply(ctx, &m, false)...)
	if !resp.Diagnostics.HasError() {
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	}
}

func (r *releaseResource[T, P]) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m, prior T
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() || r.notConfigured(&resp.Diagnostics) {
		return
	}
	if len(P(&prior).release().Drift.Elements()) == 0 && settingsOnly(req.Plan.Raw, req.State.Raw, req.Config.Raw) {
		keepSettings(P(&prior).release(), P(&m).release())
		resp.Diagnostics.Append(resp.State.Set(ctx, &prior)...) // no Helm operation: nothing in the cluster changes
		return
	}
	ctx, cancel, diags := withTimeout(ctx, P(&m).release(), "update")
	defer cancel()
	resp.Diagnostics.Append(diags...)
	resp.Diagnostics.Append(r.apply(ctx, &m, true)...)
	if !resp.Diagnostics.HasError() {
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	}
}

// apply installs or upgrades the release as m says and fills in the
// computed attributes.
func (r *releaseResource[T, P]) apply(ctx context.Context, m *T, update bool) diag.Diagnostics {
	var diags diag.Diagnostics
	b := P(m).release()
	rel := r.withLogs(ctx, r.handle(m))
	if diags.Append(r.checkConflicts(ctx, m, "")...); diags.HasError() {
		return diags
	}
	src := r.source(b)
	load := helm.LoadChart
	if r.spec.Load != nil {
		load = func(src helm.Source) (*chart.Chart, error) { return r.spec.Load(src, m) }
	}
	ch, err := load(src)
	if err != nil {
		diags.AddAttributeError(path.Root("chart"), fmt.Sprintf("Cannot load the %s chart", r.spec.Chart.Product), err.Error())
		return diags
	}
	vals, err := r.values(m, ch)
	if err != nil {
		diags.AddError(fmt.Sprintf("Invalid %s values", r.spec.Chart.Product), err.Error())
		return diags
	}
	opts := helm.Options{Chart: ch, Values: vals, Timeout: helmTimeout(ctx)}
	if r.spec.Omit != nil {
		opts.Omit = r.spec.Omit(m)
	}
	existing, found, err := rel.Get(ctx)
	if err != nil {
		diags.AddError(fmt.Sprintf("Reading release %s failed", rel.ID()), err.Error())
		return diags
	}
	start := time.Now()
	if r.spec.Prepare != nil && !(found && !update && existing.Info.Status == release.StatusDeployed) {
		if err := r.spec.Prepare(ctx, r.client, m); err != nil {
			failed(ctx, &diags, fmt.Sprintf("Preparing %s failed", r.spec.Chart.Product), err)
			return diags
		}
	}
	var out *release.Release
	switch {
	case found && !update && existing.Info.Status == release.StatusDeployed:
		diags.AddError(fmt.Sprintf("Release %s already exists", rel.ID()),
			fmt.Sprintf("A Helm release %s is already installed (%s). Import it with `terraform import` and the ID %q, or choose another name or namespace.",
				rel.ID(), helm.Summary(existing), rel.ID()))
		return diags
	case found:
		opts.Timeout = helmTimeout(ctx) // Prepare took its share
		out, err = rel.Upgrade(ctx, opts)
	default:
		opts.Timeout = helmTimeout(ctx)
		out, err = rel.Install(ctx, opts)
	}
	if err != nil {
		verb := "Installing"
		if found {
			verb = "Upgrading"
		}
		failed(ctx, &diags, fmt.Sprintf("%s %s failed", verb, r.spec.Chart.Product), err)
		return diags
	}
	if r.spec.Finish != nil {
		if err := r.spec.Finish(ctx, r.client, m); err != nil {
			failed(ctx, &diags, fmt.Sprintf("Finishing %s failed", r.spec.Chart.Product), err)
			return diags
		}
	}
	tflog.Info(ctx, fmt.Sprintf("%s applied in %s", helm.Summary(out), time.Since(start).Round(100*time.Millisecond)))
	b.ID = types.StringValue(rel.ID())
	b.Drift = emptyList()
	b.Revision = types.Int64Value(int64(out.Version))
	b.Status = types.StringValue(out.Info.Status.String())
	return diags
}

func (r *releaseResource[T, P]) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m T
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || r.notConnected(&resp.Diagnostics, true) {
		return
	}
	b := P(&m).release()
	rel := r.withLogs(ctx, r.handle(&m))
	cur, found, err := rel.Get(ctx)
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Reading release %s failed", rel.ID()), err.Error())
		return
	}
	if !found {
		resp.State.RemoveResource(ctx) // uninstalled out of band: plan installs again
		return
	}
	importing := b.Version.IsNull()
	if importing {
		r.fromRelease(&m, cur)
	}
	if v := cur.Chart.Metadata.Version; strings.TrimPrefix(b.Version.ValueString(), "v") != strings.TrimPrefix(v, "v") {
		b.Version = types.StringValue(v) // upgraded or rolled back out of band
	}
	start := time.Now()
	rep, err := rel.Drift(ctx, cur)
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Checking release %s for drift failed", rel.ID()), err.Error())
		return
	}
	if !importing {
		rep.Lines = append(rep.Lines, r.valuesDrift(&m, cur)...)
	}
	if r.spec.Drift != nil {
		lines, err := r.spec.Drift(ctx, r.client, &m)
		if err != nil {
			resp.Diagnostics.AddError(fmt.Sprintf("Checking release %s for drift failed", rel.ID()), err.Error())
			return
		}
		rep.Lines = append(rep.Lines, lines...)
	}
	tflog.Info(ctx, fmt.Sprintf("drift check of %s: %d objects, %d drifted fields, in %s",
		helm.Summary(cur), rep.Objects, len(rep.Lines), time.Since(start).Round(time.Millisecond)))
	for _, u := range rep.Unchecked {
		resp.Diagnostics.AddWarning(fmt.Sprintf("An object of release %s could not be checked for drift", rel.ID()), u)
	}
	b.ID = types.StringValue(rel.ID())
	b.Drift = stringList(rep.Lines)
	b.Revision = types.Int64Value(int64(cur.Version))
	b.Status = types.StringValue(cur.Info.Status.String())
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// valuesDrift reports a release whose values are not what the configuration
// gives (someone ran helm upgrade with other values).
func (r *releaseResource[T, P]) valuesDrift(m *T, cur *release.Release) []string {
	if cur.Chart == nil {
		return nil
	}
	want, err := r.values(m, cur.Chart)
	if err != nil {
		return nil
	}
	if canonical(want) == canonical(cur.Config) {
		return nil
	}
	return []string{fmt.Sprintf("Release %s/%s: revision %d has values that differ from this configuration (changed with helm outside Terraform?)",
		cur.Namespace, cur.Name, cur.Version)}
}

func canonical(v map[string]any) string {
	if v == nil {
		v = map[string]any{}
	}
	b, _ := json.Marshal(v)
	var x any
	_ = json.Unmarshal(b, &x)
	b, _ = json.Marshal(x)
	return string(b)
}

// fromRelease sets the configuration attributes from a release (import).
func (r *releaseResource[T, P]) fromRelease(m *T, rel *release.Release) {
	b := P(m).release()
	b.Namespace, b.Name = types.StringValue(rel.Namespace), types.StringValue(rel.Name)
	b.Version = types.StringValue(rel.Chart.Metadata.Version)
	b.Timeout = types.StringValue(defaultTimeout.String())
	b.RemoveCRDs = types.BoolValue(false)
	if r.spec.FromValues != nil {
		r.spec.FromValues(rel.Config, m)
	}
}

func (r *releaseResource[T, P]) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m T
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || r.notConfigured(&resp.Diagnostics) {
		return
	}
	b := P(&m).release()
	ctx, cancel, diags := withTimeout(ctx, b, "delete")
	defer cancel()
	resp.Diagnostics.Append(diags...)
	rel := r.withLogs(ctx, r.handle(&m))
	if err := rel.Uninstall(ctx, b.RemoveCRDs.ValueBool(), helmTimeout(ctx)); err != nil {
		failed(ctx, &resp.Diagnostics, fmt.Sprintf("Uninstalling %s failed", r.spec.Chart.Product), err)
		return
	}
	if r.spec.Cleanup != nil {
		if err := r.spec.Cleanup(ctx, r.client, &m); err != nil {
			failed(ctx, &resp.Diagnostics, fmt.Sprintf("Uninstalling %s failed", r.spec.Chart.Product), err)
		}
	}
}

func (r *releaseResource[T, P]) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	ref, err := kube.ParseImportID(req.ID, true)
	if err != nil {
		resp.Diagnostics.AddError("Invalid import ID", strings.Replace(err.Error(), `"namespace/name"`, `"namespace/release"`, 1))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), ref.String())...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), ref.Namespace)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), ref.Name)...)
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
