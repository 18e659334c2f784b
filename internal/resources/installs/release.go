// aiplatform_kueue, …: the install engine's Helm back end (helmBackend), and
// chartSpec, the configuration a chart's resource file fills in.

package installs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// releaseModel is what every Helm release resource has.
type releaseModel struct {
	installModel
	Name     types.String `tfsdk:"name"`
	Chart    *chartModel  `tfsdk:"chart"`
	Values   types.String `tfsdk:"values"`
	Revision types.Int64  `tfsdk:"revision"`
	Status   types.String `tfsdk:"status"`
}

func (m *releaseModel) release() *releaseModel { return m }

type chartModel struct {
	Repository types.String `tfsdk:"repository"`
	Name       types.String `tfsdk:"name"`
	Path       types.String `tfsdk:"path"`
}

// helmModel is a resource model that embeds releaseModel.
type helmModel[T any] interface {
	model[T]
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
	// Hooks are the resource's work around the release's.
	Hooks hooks[T]
}

// releaseResource is the install engine with the Helm back end; it also
// adopts hashicorp/helm's releases (move.go).
type releaseResource[T any, P helmModel[T]] struct {
	*installResource[T, P]
	spec chartSpec[T]
}

func newRelease[T any, P helmModel[T]](spec chartSpec[T]) resource.Resource {
	return &releaseResource[T, P]{spec: spec, installResource: &installResource[T, P]{
		typeName: spec.TypeName, description: spec.Description, attributes: spec.Attributes, validateFn: spec.Validate,
		hooks: spec.Hooks, subject: spec.Chart.Product, backend: &helmBackend[T, P]{spec: spec},
	}}
}

// helmBackend installs a chart as a Helm release (internal/helm).
type helmBackend[T any, P helmModel[T]] struct {
	spec   chartSpec[T]
	client *kube.Client
}

func (r *helmBackend[T, P]) configure(c *kube.Client) { r.client = c }

func (r *helmBackend[T, P]) schema() (map[string]schema.Attribute, string) {
	ch := r.spec.Chart
	defaultChart := fmt.Sprintf("`{ repository = %q, name = %q }`", ch.Default.Repository, ch.Default.Name)
	version := schema.StringAttribute{
		MarkdownDescription: fmt.Sprintf("Version of the %s chart. Changing it upgrades the release.", ch.Product) + upgradeDoc(ch.Upgrades),
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
		"remove_crds": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			MarkdownDescription: "Delete the chart's CRDs — and with them every object of those kinds — when the release is destroyed. Default `false`: the CRDs stay."},
		"drift": schema.ListAttribute{ElementType: types.StringType, Computed: true,
			MarkdownDescription: "Fields of the release's objects that differ in the cluster from what the release applied, as " +
				"`Kind/namespace/name: field live → release`, computed at every refresh: each object is compared with the live one (read with one listing per kind), " +
				"and one that may differ is server-side applied in dry-run mode to show exactly what an apply would change. " +
				"Any drift plans an update that applies the release again and puts the fields back; the plan shows it as `drift` becoming `[]`."},
		"revision": schema.Int64Attribute{Computed: true, MarkdownDescription: "Revision of the Helm release."},
		"status":   schema.StringAttribute{Computed: true, MarkdownDescription: "Status of the release's latest revision (`deployed` after a successful apply)."},
	}
	return attrs, ch.Product + " release"
}

func (r *helmBackend[T, P]) validate(m *T, diags *diag.Diagnostics) {
	b := P(m).release()
	if c := b.Chart; c != nil {
		hasPath := !c.Path.IsNull()
		hasRepo := !c.Repository.IsNull() || !c.Name.IsNull()
		switch {
		case hasPath && hasRepo:
			diags.AddAttributeError(path.Root("chart"), "Conflicting chart source",
				"chart: set either path, or repository and name, not both.")
		case !hasPath && (c.Repository.IsNull() || c.Name.IsNull()) && !c.Repository.IsUnknown() && !c.Name.IsUnknown():
			diags.AddAttributeError(path.Root("chart"), "Incomplete chart source",
				"chart: a repository source needs both repository and name (or set path to a local chart).")
		}
	}
	if !b.Values.IsNull() && !b.Values.IsUnknown() {
		if _, err := helm.ParseValues(b.Values.ValueString()); err != nil {
			diags.AddAttributeError(path.Root("values"), "Invalid values", "values: "+err.Error())
		}
	}
}

// handle is b's release on c, logging to ctx.
func handle(ctx context.Context, c *kube.Client, b *releaseModel) *helm.Release {
	rel := &helm.Release{Client: c, Namespace: b.Namespace.ValueString(), Name: b.Name.ValueString()}
	rel.Log = func(msg string) { tflog.Info(ctx, msg, map[string]any{"release": rel.ID()}) }
	rel.Debug = func(msg string) { tflog.Debug(ctx, "helm: "+msg, map[string]any{"release": rel.ID()}) }
	return rel
}

// chartSource is where b's chart comes from (the default of ch unless b's
// chart says otherwise).
func chartSource(ch helm.Chart, b *releaseModel) helm.Source {
	src := ch.Default
	src.Version = b.Version.ValueString()
	if c := b.Chart; c != nil {
		if !c.Path.IsNull() {
			return helm.Source{Path: c.Path.ValueString(), Version: src.Version}
		}
		src.Repository, src.Name = c.Repository.ValueString(), c.Name.ValueString()
	}
	return src
}

func (r *helmBackend[T, P]) install(m *T) (helm.Install, bool) {
	var cfg helm.Config
	if r.spec.Config != nil {
		var known bool
		if cfg, known = r.spec.Config(m); !known {
			return helm.Install{}, false
		}
	}
	b := P(m).release()
	return helm.Install{Chart: r.spec.Chart.Product, Namespace: b.Namespace.ValueString(), Name: b.Name.ValueString(), Config: cfg}, true
}

func (r *helmBackend[T, P]) name(m *T) (types.String, bool) { return P(m).release().Name, false }

func (r *helmBackend[T, P]) plan(context.Context, tfsdk.Config, *T) diag.Diagnostics { return nil }

// source reads a local chart's Chart.yaml when the plan will apply it: a
// path that holds no chart, or a chart of another version than planned, is
// refused at plan rather than at apply, where other resources of the same
// run may already have changed the cluster. A remote chart is read at apply
// only (no network at plan).
func (r *helmBackend[T, P]) source(m *T) diag.Diagnostics {
	var diags diag.Diagnostics
	b := P(m).release()
	if b.Chart == nil || !object.Known(b.Chart.Path) {
		return diags
	}
	product := r.spec.Chart.Product
	if r.spec.Load != nil { // a chart with others beside it: load them all
		if _, err := r.loadChart(m); err != nil {
			diags.AddAttributeError(path.Root("chart").AtName("path"), fmt.Sprintf("Cannot load the %s chart", product), err.Error())
		}
		return diags
	}
	dir := b.Chart.Path.ValueString()
	have, err := helm.LocalChartVersion(dir)
	if err != nil {
		diags.AddAttributeError(path.Root("chart").AtName("path"), fmt.Sprintf("Cannot load the %s chart", product), err.Error())
		return diags
	}
	if object.Known(b.Version) {
		if err := helm.VersionMismatch(dir, have, b.Version.ValueString()); err != nil {
			diags.AddAttributeError(path.Root("version"), fmt.Sprintf("Not the %s chart of this version", product), err.Error())
		}
	}
	return diags
}

// upgradeDoc says what the plan of a version change shows and refuses, when
// the catalogue has rules for the product.
func upgradeDoc(u catalog.Upgrades) string {
	if u.Group == "" {
		return ""
	}
	var rules []string
	for _, g := range u.Through {
		rules = append(rules, fmt.Sprintf("an upgrade from below %s to a later minor version (it must stop at %s first)", g.Version, g.Version))
	}
	for _, a := range u.Unserves {
		rules = append(rules, fmt.Sprintf("an upgrade to %s or later while a CRD's `status.storedVersions` still lists %s, which %s stops serving", a.Since, a.Version, a.Since))
	}
	for _, a := range u.Stores {
		rules = append(rules, fmt.Sprintf("a downgrade from %s or later to a version before it (objects are stored at %s since)", a.Since, a.Version))
	}
	doc := " The plan of a change warns of what the new version changes for users (upstream's release notes, as the provider knows them)"
	if len(rules) > 0 {
		doc += " and refuses, naming the safe path, " + strings.Join(rules, "; ")
	}
	return doc + ". A CRD that the installed chart created from its `crds/` directory and the new chart renders among its " +
		"templates (Kubeflow Trainer 2.2 → 2.3) first gets Helm's ownership label and annotations, so that the upgrade takes it " +
		"over instead of failing on it; the plan lists each such CRD."
}

// upgrade judges a change of version: upstream's rules (catalog.Upgrades),
// against the stored versions of the live CRDs, and what the new chart
// changes in CRDs and webhooks against the live release's.
func (r *helmBackend[T, P]) upgrade(ctx context.Context, m, prior *T) diag.Diagnostics {
	var diags diag.Diagnostics
	u, product := r.spec.Chart.Upgrades, r.spec.Chart.Product
	from, to := P(prior).release().Version, P(m).release().Version
	if r.client == nil || !object.Known(from) || !object.Known(to) {
		return diags
	}
	// A chart moved to another path or repository at the same version
	// (LWS's module charts all say 0.1.0) is an upgrade too.
	was, next := chartSource(r.spec.Chart, P(prior).release()), chartSource(r.spec.Chart, P(m).release())
	if from.ValueString() == to.ValueString() && was == next {
		return diags
	}
	fromLabel, toLabel := from.ValueString(), to.ValueString()
	if fromLabel == toLabel {
		fromLabel, toLabel = was.String(), next.String()
	}
	var notes []string
	if u.Group != "" && from.ValueString() != to.ValueString() {
		var stored map[string][]string // nil: not read, or unreadable
		if len(u.Unserves) > 0 {
			var err error
			if stored, err = r.client.StoredVersions(ctx, u.Group); err != nil {
				diags.AddAttributeWarning(path.Root("version"), "Upgrade check could not read the CRDs",
					fmt.Sprintf("Whether objects of %s are still stored at an API version %s %s no longer serves could not be checked: %v",
						u.Group, product, to.ValueString(), err))
			}
		}
		p := u.Plan(product, from.ValueString(), to.ValueString(), stored)
		if p.Refusal != "" {
			diags.AddAttributeError(path.Root("version"), fmt.Sprintf("Upgrade path not supported by %s", product), p.Refusal)
			return diags
		}
		notes = p.Notes
	}
	changes, err := r.chartChanges(ctx, m, prior)
	if err != nil {
		diags.AddAttributeWarning(path.Root("version"), "Upgrade check could not compare the charts",
			fmt.Sprintf("What %s %s changes in CRDs and admission webhooks against the installed %s was not checked: %v",
				product, toLabel, fromLabel, err))
	}
	if notes = append(notes, changes...); len(notes) > 0 {
		diags.AddAttributeWarning(path.Root("version"), fmt.Sprintf("%s %s → %s changes what users see", product, fromLabel, toLabel),
			"- "+strings.Join(notes, "\n- "))
	}
	return diags
}

// chartChanges renders the chart m plans and lists what it changes in CRDs
// and admission webhooks against the live release of prior
// (helm.Changes). Values not known until apply leave it unchecked.
func (r *helmBackend[T, P]) chartChanges(ctx context.Context, m, prior *T) ([]string, error) {
	b := P(m).release()
	if b.Values.IsUnknown() || b.Chart != nil && (b.Chart.Path.IsUnknown() || b.Chart.Repository.IsUnknown() || b.Chart.Name.IsUnknown()) {
		return nil, errors.New("the chart or its values are known only at apply")
	}
	var omit []string
	if r.spec.Config != nil {
		if _, known := r.spec.Config(m); !known {
			return nil, errors.New("settings of the install are known only at apply")
		}
	}
	if r.spec.Omit != nil {
		omit = r.spec.Omit(m)
	}
	cur, found, err := handle(ctx, r.client, P(prior).release()).Get(ctx)
	if err != nil || !found {
		return nil, cmp.Or(err, errors.New("the release is not installed"))
	}
	before, err := helm.ReleaseObjects(cur)
	if err != nil {
		return nil, err
	}
	ch, err := r.loadChart(m)
	if err != nil {
		return nil, err
	}
	vals, err := r.values(m, ch)
	if err != nil {
		return nil, err
	}
	after, err := helm.Render(ch, vals, b.Namespace.ValueString(), b.Name.ValueString(), omit)
	if err != nil {
		return nil, err
	}
	changes := helm.Changes(before, after)
	for _, name := range helm.MovedCRDs(cur.Chart, ch, after) {
		changes = append(changes, helm.MovedCRDNote(name))
	}
	return changes, nil
}

// same: the plan differs from the state in settings alone (or not at all).
func (r *helmBackend[T, P]) same(plan, state, config tftypes.Value, _, _ *T) bool {
	return settingsOnly(plan, state, config)
}

// keep is prior with m's settings: the release stays as it is, and so does
// everything read from it.
func (r *helmBackend[T, P]) keep(m, prior *T) *T {
	keepSettings(P(prior).install(), P(m).install())
	return prior
}

func (r *helmBackend[T, P]) changed(m *T, create bool) {
	b := P(m).release()
	b.Revision, b.Status = types.Int64Unknown(), types.StringValue(release.StatusDeployed.String())
	if create {
		b.Status = types.StringUnknown()
	}
}

// values computes the chart values for m.
func (r *helmBackend[T, P]) values(m *T, ch *chart.Chart) (map[string]any, error) {
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

// loadChart loads the chart m names (spec.Load, else helm.LoadChart).
func (r *helmBackend[T, P]) loadChart(m *T) (*chart.Chart, error) {
	src := chartSource(r.spec.Chart, P(m).release())
	if r.spec.Load != nil {
		return r.spec.Load(src, m)
	}
	return helm.LoadChart(src)
}

// apply installs or upgrades the release as m says and fills in the
// computed attributes.
func (r *helmBackend[T, P]) apply(ctx context.Context, _ tfsdk.Config, m *T, update bool) diag.Diagnostics {
	var diags diag.Diagnostics
	b := P(m).release()
	rel := handle(ctx, r.client, b)
	ch, err := r.loadChart(m)
	if err != nil {
		diags.AddAttributeError(path.Root("chart"), fmt.Sprintf("Cannot load the %s chart", r.spec.Chart.Product), err.Error())
		return diags
	}
	vals, err := r.values(m, ch)
	if err != nil {
		diags.AddError(fmt.Sprintf("Invalid %s values", r.spec.Chart.Product), err.Error())
		return diags
	}
	opts := helm.Options{Chart: ch, Values: vals, Timeout: opTimeout(ctx)}
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
		opts.Timeout = opTimeout(ctx) // Prepare took its share
		out, err = rel.Upgrade(ctx, opts)
	default:
		opts.Timeout = opTimeout(ctx)
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

func (r *helmBackend[T, P]) read(ctx context.Context, m *T, importing bool) (bool, diag.Diagnostics) {
	var diags diag.Diagnostics
	b := P(m).release()
	rel := handle(ctx, r.client, b)
	cur, found, err := rel.Get(ctx)
	if err != nil {
		diags.AddError(fmt.Sprintf("Reading release %s failed", rel.ID()), err.Error())
		return false, diags
	}
	if !found {
		return false, diags
	}
	if importing {
		r.fromRelease(m, cur)
	}
	if v := cur.Chart.Metadata.Version; strings.TrimPrefix(b.Version.ValueString(), "v") != strings.TrimPrefix(v, "v") {
		b.Version = types.StringValue(v) // upgraded or rolled back out of band
	}
	start := time.Now()
	rep, err := rel.Drift(ctx, cur)
	if err != nil {
		diags.AddError(fmt.Sprintf("Checking release %s for drift failed", rel.ID()), err.Error())
		return false, diags
	}
	if !importing {
		rep.Lines = append(rep.Lines, r.valuesDrift(m, cur)...)
	}
	if r.spec.Drift != nil {
		lines, err := r.spec.Drift(ctx, r.client, m)
		if err != nil {
			diags.AddError(fmt.Sprintf("Checking release %s for drift failed", rel.ID()), err.Error())
			return false, diags
		}
		rep.Lines = append(rep.Lines, lines...)
	}
	tflog.Info(ctx, fmt.Sprintf("drift check of %s: %d objects, %d drifted fields, in %s",
		helm.Summary(cur), rep.Objects, len(rep.Lines), time.Since(start).Round(time.Millisecond)))
	for _, u := range rep.Unchecked {
		diags.AddWarning(fmt.Sprintf("An object of release %s could not be checked for drift", rel.ID()), u)
	}
	b.ID = types.StringValue(rel.ID())
	b.Drift = stringList(rep.Lines)
	b.Revision = types.Int64Value(int64(cur.Version))
	b.Status = types.StringValue(cur.Info.Status.String())
	return true, diags
}

// valuesDrift reports a release whose values are not what the configuration
// gives (someone ran helm upgrade with other values).
func (r *helmBackend[T, P]) valuesDrift(m *T, cur *release.Release) []string {
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
func (r *helmBackend[T, P]) fromRelease(m *T, rel *release.Release) {
	b := P(m).release()
	b.Namespace, b.Name = types.StringValue(rel.Namespace), types.StringValue(rel.Name)
	b.Version = types.StringValue(rel.Chart.Metadata.Version)
	b.Timeout = types.StringValue(defaultTimeout.String())
	b.RemoveCRDs = types.BoolValue(false)
	if r.spec.FromValues != nil {
		r.spec.FromValues(rel.Config, m)
	}
}

func (r *helmBackend[T, P]) uninstall(ctx context.Context, m *T) diag.Diagnostics {
	var diags diag.Diagnostics
	b := P(m).release()
	rel := handle(ctx, r.client, b)
	if err := rel.Uninstall(ctx, b.RemoveCRDs.ValueBool(), opTimeout(ctx)); err != nil {
		failed(ctx, &diags, fmt.Sprintf("Uninstalling %s failed", r.spec.Chart.Product), err)
		return diags
	}
	if r.spec.Cleanup != nil {
		if err := r.spec.Cleanup(ctx, r.client, m); err != nil {
			failed(ctx, &diags, fmt.Sprintf("Uninstalling %s failed", r.spec.Chart.Product), err)
		}
	}
	return diags
}

func (r *helmBackend[T, P]) importState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	ref, err := kube.ParseImportID(req.ID, true)
	if err != nil {
		resp.Diagnostics.AddError("Invalid import ID", strings.Replace(err.Error(), `"namespace/name"`, `"namespace/release"`, 1))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), ref.String())...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), ref.Namespace)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), ref.Name)...)
}
