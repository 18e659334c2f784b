package installs

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/manifests"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// aiplatform_mpi_operator's create, read, update, delete and import.

func (r *mpiOperatorResource) set(ctx context.Context, namespace string) *manifests.Set {
	s := &manifests.Set{Client: r.client, Namespace: namespace, Name: manifests.MPIOperatorName}
	s.Log = func(msg string) { tflog.Info(ctx, msg, map[string]any{"mpi_operator": s.ID()}) }
	return s
}

// notConnected reports a resource without a client (the connection is known
// only after apply), as every resource does: a refresh keeps the recorded
// state with a warning, anything else fails saying how to proceed.
func (r *mpiOperatorResource) notConnected(diags *diag.Diagnostics, reading bool) bool {
	if r.client == nil {
		object.NotConnected(diags, reading)
		return true
	}
	return false
}

// withTimeout bounds ctx by the time op may take under m's timeouts (the
// deprecated timeout filling in).
func (m *mpiOperatorModel) withTimeout(ctx context.Context, op string, diags *diag.Diagnostics) (context.Context, context.CancelFunc) {
	d, ds := object.OperationTimeout(ctx, m.Timeouts, op, m.Timeout, defaultTimeout)
	diags.Append(ds...)
	return object.WithBudget(ctx, op, d)
}

// record renders m's manifest file into what an apply records.
func (r *mpiOperatorResource) record(ctx context.Context, m *mpiOperatorModel, configuredImage string) (manifests.Record, diag.Diagnostics) {
	out, diags := m.render(ctx, configuredImage)
	if diags.HasError() {
		return manifests.Record{}, diags
	}
	return manifests.Record{
		Version: m.Version.ValueString(), Source: manifests.SourceString(m.source()), Image: out.Image, Objects: out.Objects,
	}, diags
}

// configuredImage is the image the configuration sets ("" for the file's).
func configuredImage(ctx context.Context, cfg interface {
	GetAttribute(context.Context, path.Path, any) diag.Diagnostics
}) string {
	var img types.String
	cfg.GetAttribute(ctx, path.Root("image"), &img)
	return img.ValueString()
}

func (r *mpiOperatorResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m mpiOperatorModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || r.notConnected(&resp.Diagnostics, false) {
		return
	}
	if resp.Diagnostics.Append(r.checkConflicts(ctx, &m, "")...); resp.Diagnostics.HasError() {
		return
	}
	s := r.set(ctx, m.Namespace.ValueString())
	if cur, found, err := s.Get(ctx); err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Reading the MPI Operator's record in %s failed", s.Namespace), err.Error())
		return
	} else if found {
		resp.Diagnostics.AddError(fmt.Sprintf("The MPI Operator is already installed in namespace %s", s.Namespace),
			fmt.Sprintf("This provider installed the MPI Operator %s in namespace %s before. Import it with `terraform import` and the ID %q.",
				cur.Summary(), s.Namespace, s.Namespace))
		return
	}
	rec, diags := r.record(ctx, &m, configuredImage(ctx, req.Config))
	if resp.Diagnostics.Append(diags...); diags.HasError() {
		return
	}
	start := time.Now()
	ctx, cancel := m.withTimeout(ctx, "create", &resp.Diagnostics)
	defer cancel()
	if err := s.Install(ctx, rec, helmTimeout(ctx)); err != nil {
		failed(ctx, &resp.Diagnostics, "Installing the MPI Operator failed", err)
		return
	}
	tflog.Info(ctx, fmt.Sprintf("MPI Operator %s installed in %s", rec.Summary(), time.Since(start).Round(100*time.Millisecond)))
	m.ID, m.Image, m.Drift = types.StringValue(s.Namespace), types.StringValue(rec.Image), emptyList()
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *mpiOperatorResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m, prior mpiOperatorModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() || r.notConnected(&resp.Diagnostics, false) {
		return
	}
	if sameInstall(&m, &prior) && len(prior.Drift.Elements()) == 0 {
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...) // timeout(s) or remove_crds only
		return
	}
	if resp.Diagnostics.Append(r.checkConflicts(ctx, &m, "")...); resp.Diagnostics.HasError() {
		return
	}
	s := r.set(ctx, m.Namespace.ValueString())
	rec, diags := r.record(ctx, &m, configuredImage(ctx, req.Config))
	if resp.Diagnostics.Append(diags...); diags.HasError() {
		return
	}
	prev, found, err := s.Get(ctx)
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Reading the MPI Operator's record in %s failed", s.Namespace), err.Error())
		return
	}
	start := time.Now()
	ctx, cancel := m.withTimeout(ctx, "update", &resp.Diagnostics)
	defer cancel()
	if found {
		err = s.Upgrade(ctx, rec, *prev, helmTimeout(ctx))
	} else {
		err = s.Install(ctx, rec, helmTimeout(ctx)) // the record went with the namespace
	}
	if err != nil {
		failed(ctx, &resp.Diagnostics, "Applying the MPI Operator failed", err)
		return
	}
	tflog.Info(ctx, fmt.Sprintf("MPI Operator %s applied in %s", rec.Summary(), time.Since(start).Round(100*time.Millisecond)))
	m.ID, m.Image, m.Drift = types.StringValue(s.Namespace), types.StringValue(rec.Image), emptyList()
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *mpiOperatorResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m mpiOperatorModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || r.notConnected(&resp.Diagnostics, true) {
		return
	}
	s := r.set(ctx, m.Namespace.ValueString())
	rec, found, err := s.Get(ctx)
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Reading the MPI Operator's record in %s failed", s.Namespace), err.Error())
		return
	}
	if !found {
		if m.Version.IsNull() {
			resp.Diagnostics.AddError(fmt.Sprintf("No MPI Operator installed by this provider in namespace %s", s.Namespace),
				fmt.Sprintf("There is no record Secret aiplatform.manifests.%s in namespace %s. An MPI Operator applied with kubectl "+
					"is not imported: declare aiplatform_mpi_operator with namespace = %q and apply, which takes its objects over.",
					manifests.MPIOperatorName, s.Namespace, s.Namespace))
			return
		}
		resp.State.RemoveResource(ctx) // uninstalled out of band (or its namespace deleted): plan installs again
		return
	}
	if m.Version.IsNull() { // importing
		m.Timeout, m.RemoveCRDs = types.StringValue(defaultTimeout.String()), types.BoolValue(false)
		src := manifests.ParseSource(rec.Source)
		if src.Path != "" || src.URL != manifests.MPIOperatorURL(rec.Version) {
			m.Manifests = &manifestsModel{URL: types.StringNull(), Path: types.StringNull()}
			if src.Path != "" {
				m.Manifests.Path = types.StringValue(src.Path)
			} else {
				m.Manifests.URL = types.StringValue(src.URL)
			}
		}
	}
	m.ID = types.StringValue(s.Namespace)
	m.Version, m.Image = types.StringValue(rec.Version), types.StringValue(rec.Image)
	start := time.Now()
	rep := s.Drift(ctx, rec)
	tflog.Info(ctx, fmt.Sprintf("drift check of the MPI Operator %s: %d objects, %d drifted fields, in %s",
		rec.Summary(), rep.Objects, len(rep.Lines), time.Since(start).Round(time.Millisecond)))
	for _, u := range rep.Unchecked {
		resp.Diagnostics.AddWarning(fmt.Sprintf("An object of the MPI Operator in %s could not be checked for drift", s.Namespace), u)
	}
	m.Drift = stringList(rep.Lines)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *mpiOperatorResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m mpiOperatorModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || r.notConnected(&resp.Diagnostics, false) {
		return
	}
	s := r.set(ctx, m.Namespace.ValueString())
	rec, found, err := s.Get(ctx)
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Reading the MPI Operator's record in %s failed", s.Namespace), err.Error())
		return
	}
	if !found {
		return
	}
	ctx, cancel := m.withTimeout(ctx, "delete", &resp.Diagnostics)
	defer cancel()
	if err := s.Uninstall(ctx, rec, m.RemoveCRDs.ValueBool(), helmTimeout(ctx)); err != nil {
		failed(ctx, &resp.Diagnostics, "Uninstalling the MPI Operator failed", err)
	}
}

func (r *mpiOperatorResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if !validNamespace(req.ID) {
		resp.Diagnostics.AddError("Invalid import ID",
			fmt.Sprintf("%q is not a namespace: the import ID of aiplatform_mpi_operator is the namespace it is installed in, e.g. %q",
				req.ID, manifests.MPIOperatorNamespace))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), req.ID)...)
}

func validNamespace(s string) bool { return len(validation.IsDNS1123Label(s)) == 0 }
