package installs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/manifests"
)

// The install engine's manifest-set back end (manifestBackend): the objects
// of a manifest file, installed, checked for drift and removed by
// internal/manifests with the semantics of the Helm back end, recorded in
// a Secret in the install's namespace (as Helm records a release), so that
// refresh, import and destroy work from the cluster. The install is
// identified by its namespace (the import ID); its name is fixed.

// manifestSpec is everything that differs between two manifest-set
// resources.
type manifestSpec[T any] struct {
	TypeName    string // without the provider prefix
	Description string
	// Product names the install in the conflict rules (helm.Install.Chart);
	// The and A in messages ("the MPI Operator", "an MPI Operator").
	Product, The, A string
	// Name is the install's (and its manifests.Set's) fixed name, Namespace
	// its default namespace.
	Name, Namespace string
	// Attributes are the resource's attributes, timeout aside.
	Attributes map[string]schema.Attribute
	Validate   func(m *T) diag.Diagnostics
	// Known reports whether what the plan renders and the conflict rules
	// read is known.
	Known func(m *T) bool
	// Plan renders m at plan time (cfg: the configuration) and plans the
	// attributes read from the rendering.
	Plan func(ctx context.Context, cfg tfsdk.Config, m *T) diag.Diagnostics
	// Same reports whether plan applies what prior has applied.
	Same func(plan, prior *T) bool
	// Render is what an apply of m applies and records.
	Render func(ctx context.Context, cfg tfsdk.Config, m *T) (manifests.Record, diag.Diagnostics)
	// FromRecord sets m's attributes from what is recorded (after an apply,
	// and at every refresh; importing: m has only its namespace).
	FromRecord func(m *T, rec *manifests.Record, importing bool)
	Hooks      hooks[T]
}

// newManifestSet is the install engine with the manifest-set back end.
func newManifestSet[T any, P model[T]](spec manifestSpec[T]) resource.Resource {
	return &installResource[T, P]{
		typeName: spec.TypeName, description: spec.Description, attributes: spec.Attributes, validateFn: spec.Validate,
		hooks: spec.Hooks, subject: spec.The, backend: &manifestBackend[T, P]{spec: spec},
	}
}

// manifestBackend installs a manifest set (internal/manifests).
type manifestBackend[T any, P model[T]] struct {
	spec   manifestSpec[T]
	client *kube.Client
}

func (r *manifestBackend[T, P]) configure(c *kube.Client) { r.client = c }

func (r *manifestBackend[T, P]) schema() (map[string]schema.Attribute, string) {
	return map[string]schema.Attribute{}, r.spec.Product
}

func (r *manifestBackend[T, P]) validate(*T, *diag.Diagnostics) {}

func (r *manifestBackend[T, P]) install(m *T) (helm.Install, bool) {
	return helm.Install{Chart: r.spec.Product, Namespace: P(m).install().Namespace.ValueString(), Name: r.spec.Name}, r.spec.Known(m)
}

func (r *manifestBackend[T, P]) name(*T) (types.String, bool) {
	return types.StringValue(r.spec.Name), true
}

func (r *manifestBackend[T, P]) plan(ctx context.Context, cfg tfsdk.Config, m *T) diag.Diagnostics {
	return r.spec.Plan(ctx, cfg, m)
}

func (r *manifestBackend[T, P]) same(_, _, _ tftypes.Value, m, prior *T) bool {
	return r.spec.Same(m, prior)
}

// upgrade: the catalogue has no upgrade rules for a manifest install.
func (r *manifestBackend[T, P]) upgrade(context.Context, *T, *T) diag.Diagnostics { return nil }

// source: the manifest file is read at plan already (plan).
func (r *manifestBackend[T, P]) source(*T) diag.Diagnostics { return nil }

// keep is the plan with the recorded drift (none).
func (r *manifestBackend[T, P]) keep(m, prior *T) *T {
	P(m).install().Drift = P(prior).install().Drift
	return m
}

func (r *manifestBackend[T, P]) changed(*T, bool) {}

func (r *manifestBackend[T, P]) set(ctx context.Context, m *T) *manifests.Set {
	s := &manifests.Set{Client: r.client, Namespace: P(m).install().Namespace.ValueString(), Name: r.spec.Name}
	key := strings.ReplaceAll(r.spec.Name, "-", "_")
	s.Log = func(msg string) { tflog.Info(ctx, msg, map[string]any{key: s.ID()}) }
	return s
}

// get reads the install's record.
func (r *manifestBackend[T, P]) get(ctx context.Context, s *manifests.Set, diags *diag.Diagnostics) (*manifests.Record, bool) {
	rec, found, err := s.Get(ctx)
	if err != nil {
		diags.AddError(fmt.Sprintf("Reading %s's record in %s failed", r.spec.The, s.Namespace), err.Error())
		return nil, false
	}
	return rec, found
}

func (r *manifestBackend[T, P]) apply(ctx context.Context, cfg tfsdk.Config, m *T, update bool) diag.Diagnostics {
	var diags diag.Diagnostics
	s := r.set(ctx, m)
	prev, found := r.get(ctx, s, &diags)
	switch {
	case diags.HasError():
		return diags
	case found && !update:
		diags.AddError(fmt.Sprintf("%s is already installed in namespace %s", upperFirst(r.spec.The), s.Namespace),
			fmt.Sprintf("This provider installed %s %s in namespace %s before. Import it with `terraform import` and the ID %q.",
				r.spec.The, prev.Summary(), s.Namespace, s.Namespace))
		return diags
	}
	rec, ds := r.spec.Render(ctx, cfg, m)
	if diags.Append(ds...); ds.HasError() {
		return diags
	}
	start := time.Now()
	var err error
	if found {
		err = s.Upgrade(ctx, rec, *prev, opTimeout(ctx))
	} else {
		err = s.Install(ctx, rec, opTimeout(ctx)) // on update: the record went with the namespace
	}
	verb, done := "Installing", "installed"
	if update {
		verb, done = "Applying", "applied"
	}
	if err != nil {
		failed(ctx, &diags, fmt.Sprintf("%s %s failed", verb, r.spec.The), err)
		return diags
	}
	tflog.Info(ctx, fmt.Sprintf("%s %s %s in %s", r.spec.Product, rec.Summary(), done, time.Since(start).Round(100*time.Millisecond)))
	f := P(m).install()
	f.ID, f.Drift = types.StringValue(s.Namespace), emptyList()
	r.spec.FromRecord(m, &rec, false)
	return diags
}

func (r *manifestBackend[T, P]) read(ctx context.Context, m *T, importing bool) (bool, diag.Diagnostics) {
	var diags diag.Diagnostics
	s := r.set(ctx, m)
	rec, found := r.get(ctx, s, &diags)
	switch {
	case diags.HasError():
		return false, diags
	case !found && importing:
		diags.AddError(fmt.Sprintf("No %s installed by this provider in namespace %s", r.spec.Product, s.Namespace),
			fmt.Sprintf("There is no record Secret aiplatform.manifests.%s in namespace %s. %s applied with kubectl "+
				"is not imported: declare aiplatform_%s with namespace = %q and apply, which takes its objects over.",
				r.spec.Name, s.Namespace, upperFirst(r.spec.A), r.spec.TypeName, s.Namespace))
		return false, diags
	case !found:
		return false, diags // uninstalled out of band (or its namespace deleted)
	}
	f := P(m).install()
	if importing {
		f.Timeout, f.RemoveCRDs = types.StringValue(defaultTimeout.String()), types.BoolValue(false)
	}
	r.spec.FromRecord(m, rec, importing)
	f.ID, f.Version = types.StringValue(s.Namespace), types.StringValue(rec.Version)
	start := time.Now()
	rep := s.Drift(ctx, rec)
	tflog.Info(ctx, fmt.Sprintf("drift check of %s %s: %d objects, %d drifted fields, in %s",
		r.spec.The, rec.Summary(), rep.Objects, len(rep.Lines), time.Since(start).Round(time.Millisecond)))
	for _, u := range rep.Unchecked {
		diags.AddWarning(fmt.Sprintf("An object of %s in %s could not be checked for drift", r.spec.The, s.Namespace), u)
	}
	f.Drift = stringList(rep.Lines)
	return true, diags
}

func (r *manifestBackend[T, P]) uninstall(ctx context.Context, m *T) diag.Diagnostics {
	var diags diag.Diagnostics
	s := r.set(ctx, m)
	rec, found := r.get(ctx, s, &diags)
	if !found {
		return diags
	}
	if err := s.Uninstall(ctx, rec, P(m).install().RemoveCRDs.ValueBool(), opTimeout(ctx)); err != nil {
		failed(ctx, &diags, fmt.Sprintf("Uninstalling %s failed", r.spec.The), err)
	}
	return diags
}

// importState: the import ID is the namespace.
func (r *manifestBackend[T, P]) importState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if len(validation.IsDNS1123Label(req.ID)) > 0 {
		resp.Diagnostics.AddError("Invalid import ID",
			fmt.Sprintf("%q is not a namespace: the import ID of aiplatform_%s is the namespace it is installed in, e.g. %q",
				req.ID, r.spec.TypeName, r.spec.Namespace))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), req.ID)...)
}

// upperFirst is s with its first letter upper case.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
