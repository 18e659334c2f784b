// Package migration holds aiplatform_storage_version_migration: day-2
// maintenance that rewrites the objects of CRDs at their storage version and
// trims status.storedVersions, the step an upgrade that stops serving an old
// API version needs first (Kueue 0.20 and v1beta1).
package migration

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// DefaultTimeout is how long one apply may spend rewriting objects.
const DefaultTimeout = 30 * time.Minute

// importCRDs prefixes an import ID that names CRDs rather than a group.
const importCRDs = "crds:"

// crdName is a CRD's name: <plural>.<group>, the group with a dot.
var crdName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?){2,}$`)

var (
	_ resource.ResourceWithConfigure        = (*storageVersionMigration)(nil)
	_ resource.ResourceWithModifyPlan       = (*storageVersionMigration)(nil)
	_ resource.ResourceWithImportState      = (*storageVersionMigration)(nil)
	_ resource.ResourceWithConfigValidators = (*storageVersionMigration)(nil)
)

// NewStorageVersionMigration is aiplatform_storage_version_migration.
func NewStorageVersionMigration() resource.Resource { return &storageVersionMigration{} }

type storageVersionMigration struct{ client *kube.Client }

type model struct {
	ID             types.String   `tfsdk:"id"`
	Group          types.String   `tfsdk:"group"`
	CRDs           types.Set      `tfsdk:"crds"`
	StoredVersions types.Map      `tfsdk:"stored_versions"`
	Rewritten      types.Map      `tfsdk:"rewritten"`
	Timeouts       timeouts.Value `tfsdk:"timeouts"`
}

func (r *storageVersionMigration) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_storage_version_migration"
}

func (r *storageVersionMigration) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Rewrites every object of some CRDs at their storage version, then trims each CRD's " +
			"`status.storedVersions` to that version alone — the step before an upgrade that stops serving an old API " +
			"version (Kueue 0.20 stops serving `kueue.x-k8s.io/v1beta1`: a cluster that ever ran Kueue ≤ 0.15 still lists " +
			"it). The plan reads each CRD and counts the objects the apply rewrites; a CRD whose stored versions are " +
			"already its storage version alone is left alone, so a second apply plans nothing. The apply rewrites " +
			"page by page (the API server writes an object only when it was stored at another version), so an apply " +
			"cut short is resumed by applying again. Destroying it changes nothing in the cluster: a migration cannot " +
			"be undone, and need not be.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true,
				MarkdownDescription: "The group, or `crds:` and the CRD names joined by commas; also the import ID.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"group": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Migrate every CRD of this API group, e.g. `kueue.x-k8s.io`. Exactly one of `group` and `crds`.",
				Validators:          []validator.String{validators.DNSSubdomain()}},
			"crds": schema.SetAttribute{ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Migrate these CRDs, by name (`clusterqueues.kueue.x-k8s.io`). Exactly one of `group` and `crds`.",
				Validators: []validator.Set{setvalidator.SizeAtLeast(1), setvalidator.ValueStringsAre(
					stringvalidator.RegexMatches(crdName, "must be a CRD name, <plural>.<group>"))}},
			"stored_versions": schema.MapAttribute{ElementType: types.ListType{ElemType: types.StringType}, Computed: true,
				MarkdownDescription: "`status.storedVersions` of each CRD, by name, read at every plan. After an apply each " +
					"lists only the CRD's storage version; a CRD that lists more shows as a change to apply."},
			"rewritten": schema.MapAttribute{ElementType: types.Int64Type, Computed: true,
				MarkdownDescription: "Objects the last apply rewrote, by CRD (0 for a CRD that had nothing to migrate)."},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Update: true,
				CreateDescription: fmt.Sprintf("How long the first apply may spend rewriting objects, as a Go duration. Default `%q`.", object.Duration(DefaultTimeout)),
				UpdateDescription: fmt.Sprintf("How long a later apply may spend rewriting objects, as a Go duration. Default `%q`.", object.Duration(DefaultTimeout))}),
		},
	}
}

func (r *storageVersionMigration) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{resourcevalidator.ExactlyOneOf(path.MatchRoot("group"), path.MatchRoot("crds"))}
}

func (r *storageVersionMigration) Configure(_ context.Context, req resource.ConfigureRequest, _ *resource.ConfigureResponse) {
	if c, ok := req.ProviderData.(*kube.Client); ok {
		r.client = c
	}
}

// scope is the group, or the CRD names, a model migrates.
func (m *model) scope() (group string, crds []string) {
	if !m.CRDs.IsNull() {
		for _, e := range m.CRDs.Elements() {
			if s, ok := e.(types.String); ok {
				crds = append(crds, s.ValueString())
			}
		}
		sort.Strings(crds)
		return "", crds
	}
	return m.Group.ValueString(), nil
}

func (m *model) id() string {
	group, crds := m.scope()
	if crds != nil {
		return importCRDs + strings.Join(crds, ",")
	}
	return group
}

// describe names the scope for messages.
func (m *model) describe() string {
	group, crds := m.scope()
	if crds == nil {
		return "CRDs of the API group " + group
	}
	return "CRDs " + strings.Join(crds, ", ")
}

// storedVersions is the stored_versions value of states.
func storedVersions(states []kube.StorageState) types.Map {
	out := map[string]attr.Value{}
	for _, s := range states {
		vs := make([]attr.Value, 0, len(s.Stored))
		for _, v := range s.Stored {
			vs = append(vs, types.StringValue(v))
		}
		out[s.CRD] = types.ListValueMust(types.StringType, vs)
	}
	return types.MapValueMust(types.ListType{ElemType: types.StringType}, out)
}

func (r *storageVersionMigration) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy: nothing to do in the cluster
	}
	var m model
	if resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...); resp.Diagnostics.HasError() || m.Group.IsUnknown() || m.CRDs.IsUnknown() {
		return
	}
	if m.ID.IsUnknown() {
		m.ID = types.StringValue(m.id())
	}
	if r.client == nil || r.client.Unavailable() != nil {
		resp.Diagnostics.AddWarning("The storage-version migration was not read at plan",
			fmt.Sprintf("The cluster cannot be read at plan (%v): the apply reads the %s and rewrites what is stored at an old version then.", unavailable(r.client), m.describe()))
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &m)...)
		return
	}
	group, crds := m.scope()
	states, missing, err := r.client.StorageStates(ctx, group, crds)
	if err != nil {
		resp.Diagnostics.AddError("Cannot read the CRDs to migrate", err.Error())
		return
	}
	if len(missing) > 0 || len(states) == 0 {
		// They may come with an install in the same apply: the apply reads
		// them again, and fails if they are still missing.
		what := "no CRD of the API group " + group
		if len(missing) > 0 {
			what = "no CRD named " + strings.Join(missing, ", ")
		}
		resp.Diagnostics.AddWarning("No CRD to migrate at plan",
			fmt.Sprintf("The cluster at %s has %s yet (installed by this apply?). The apply reads the %s again, and fails if one is still missing.",
				r.client.Host(), what, m.describe()))
	}
	var lines []string
	for _, s := range states {
		if s.Pending() {
			n, err := r.client.CountObjects(ctx, s)
			if err != nil {
				resp.Diagnostics.AddError("Cannot count the objects to migrate", err.Error())
				return
			}
			lines = append(lines, fmt.Sprintf("- %s: %d %s object(s) rewritten at %s; status.storedVersions [%s] → [%s]",
				s.CRD, n, s.Kind, s.Storage, strings.Join(s.Stored, " "), s.Storage))
		}
	}
	if len(lines) > 0 {
		resp.Diagnostics.AddWarning("Storage-version migration planned",
			"The apply rewrites every object of these CRDs at its storage version, then trims status.storedVersions:\n"+strings.Join(lines, "\n"))
		// What the apply leaves is known after it: an install in the same
		// apply may change a storage version first.
		m.StoredVersions, m.Rewritten = types.MapUnknown(m.StoredVersions.ElementType(ctx)), types.MapUnknown(types.Int64Type)
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &m)...)
}

func unavailable(c *kube.Client) error {
	if c == nil {
		return fmt.Errorf("the provider is not configured")
	}
	return c.Unavailable()
}

func zeros(states []kube.StorageState) types.Map {
	out := map[string]attr.Value{}
	for _, s := range states {
		out[s.CRD] = types.Int64Value(0)
	}
	return types.MapValueMust(types.Int64Type, out)
}

func (r *storageVersionMigration) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	resp.Diagnostics.Append(r.apply(ctx, req.Plan, &resp.State, timeouts.Value.Create)...)
}

func (r *storageVersionMigration) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	resp.Diagnostics.Append(r.apply(ctx, req.Plan, &resp.State, timeouts.Value.Update)...)
}

// apply migrates what the plan names, within the timeout its operation
// allows, and records the result.
func (r *storageVersionMigration) apply(ctx context.Context, plan tfsdk.Plan, state *tfsdk.State,
	timeout func(timeouts.Value, context.Context, time.Duration) (time.Duration, diag.Diagnostics)) diag.Diagnostics {
	var m model
	diags := plan.Get(ctx, &m)
	if diags.HasError() {
		return diags
	}
	d, ds := timeout(m.Timeouts, ctx, DefaultTimeout)
	if diags.Append(ds...); diags.HasError() {
		return diags
	}
	if diags.Append(r.migrate(ctx, d, &m)...); !diags.HasError() {
		diags.Append(state.Set(ctx, &m)...)
	}
	return diags
}

// migrate rewrites what the scope of m still stores at an old version and
// sets the computed attributes. Every CRD is read before anything is
// rewritten, so a missing one changes nothing.
func (r *storageVersionMigration) migrate(ctx context.Context, timeout time.Duration, m *model) diag.Diagnostics {
	var diags diag.Diagnostics
	if err := unavailable(r.client); err != nil {
		diags.AddError("Cannot migrate storage versions", err.Error())
		return diags
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	group, crds := m.scope()
	states, missing, err := r.client.StorageStates(ctx, group, crds)
	if err != nil {
		diags.AddError("Cannot read the CRDs to migrate", err.Error())
		return diags
	}
	switch {
	case len(missing) > 0:
		diags.AddAttributeError(path.Root("crds"), "No CRD to migrate",
			fmt.Sprintf("crds: the cluster at %s has no CRD named %s; nothing was rewritten. Check the names, or apply the install that brings them first (depends_on).",
				r.client.Host(), strings.Join(missing, ", ")))
		return diags
	case len(states) == 0:
		diags.AddAttributeError(path.Root("group"), "No CRD to migrate",
			fmt.Sprintf("group: the cluster at %s has no CRD of the API group %s. Check the group's spelling, or apply its install first (depends_on).", r.client.Host(), group))
		return diags
	}
	rewritten := map[string]attr.Value{}
	for _, s := range states {
		n := 0
		if s.Pending() {
			tflog.Info(ctx, fmt.Sprintf("storage-version migration: %s: rewriting every object at %s", s.CRD, s.Storage))
			_, n, err = r.client.MigrateStorage(ctx, s.CRD, func(done int) {
				tflog.Info(ctx, fmt.Sprintf("storage-version migration: %s: %d object(s) rewritten", s.CRD, done))
			})
			if err != nil {
				diags.AddError("Storage-version migration failed", fmt.Sprintf("%s: %v (%d object(s) rewritten before it stopped). "+
					"Nothing is lost: objects are rewritten unchanged, and status.storedVersions is trimmed only after every one is; "+
					"apply again to resume.", s.CRD, err, n))
				return diags
			}
		}
		rewritten[s.CRD] = types.Int64Value(int64(n))
	}
	after, _, err := r.client.StorageStates(ctx, group, crds)
	if err != nil {
		diags.AddError("Cannot read the CRDs after the migration", err.Error())
		return diags
	}
	m.ID = types.StringValue(m.id())
	m.StoredVersions = storedVersions(after)
	for _, s := range after {
		if _, ok := rewritten[s.CRD]; !ok {
			rewritten[s.CRD] = types.Int64Value(0) // appeared during the migration, at the storage version
		}
	}
	m.Rewritten = types.MapValueMust(types.Int64Type, rewritten)
	return diags
}

func (r *storageVersionMigration) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m model
	if resp.Diagnostics.Append(req.State.Get(ctx, &m)...); resp.Diagnostics.HasError() {
		return
	}
	if err := unavailable(r.client); err != nil {
		return // kept as recorded; the plan says it was not read
	}
	group, crds := m.scope()
	// A CRD gone since (its product uninstalled) drops out of
	// stored_versions; the plan warns of it.
	states, _, err := r.client.StorageStates(ctx, group, crds)
	if err != nil {
		resp.Diagnostics.AddError("Cannot read the migrated CRDs", err.Error())
		return
	}
	m.StoredVersions = storedVersions(states)
	if m.Rewritten.IsNull() || m.Rewritten.IsUnknown() {
		m.Rewritten = zeros(states)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Delete forgets the migration: what it rewrote stays rewritten.
func (r *storageVersionMigration) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {
}

// ImportState takes a group (`kueue.x-k8s.io`) or `crds:` and CRD names
// joined by commas.
func (r *storageVersionMigration) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	if names, ok := strings.CutPrefix(req.ID, importCRDs); ok {
		var vals []attr.Value
		for _, n := range strings.Split(names, ",") {
			if n = strings.TrimSpace(n); !crdName.MatchString(n) {
				resp.Diagnostics.AddError("Invalid import ID", fmt.Sprintf("%q is not a CRD name (<plural>.<group>); the ID is a group, or crds: and CRD names joined by commas.", n))
				return
			}
			vals = append(vals, types.StringValue(n))
		}
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("crds"), types.SetValueMust(types.StringType, vals))...)
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("group"), req.ID)...)
}
