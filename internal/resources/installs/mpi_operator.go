package installs

import (
	"context"
	"fmt"
	"strings"

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
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/manifests"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// aiplatform_mpi_operator: the MPI Operator from its release's manifest file
// (no chart), a configuration of the install engine with the manifest-set
// back end (manifest_set.go): its schema, model, validation and rendering.

type mpiOperatorModel struct {
	installModel
	Manifests *manifestsModel `tfsdk:"manifests"`
	Image     types.String    `tfsdk:"image"`
}

type manifestsModel struct {
	URL  types.String `tfsdk:"url"`
	Path types.String `tfsdk:"path"`
}

// NewMPIOperator is aiplatform_mpi_operator.
func NewMPIOperator() resource.Resource {
	return newManifestSet[mpiOperatorModel](manifestSpec[mpiOperatorModel]{
		TypeName: "mpi_operator", Product: helm.MPIOperator, The: "the MPI Operator", A: "an MPI Operator",
		Name: manifests.MPIOperatorName, Namespace: manifests.MPIOperatorNamespace,
		Description: mpiOperatorDescription, Attributes: mpiOperatorAttributes(),
		Validate: validateMPIOperator, Known: (*mpiOperatorModel).known, Plan: planMPIOperator, Same: sameInstall,
		Render: func(ctx context.Context, cfg tfsdk.Config, m *mpiOperatorModel) (manifests.Record, diag.Diagnostics) {
			return m.record(ctx, configuredImage(ctx, cfg))
		},
		FromRecord: mpiOperatorFromRecord,
	})
}

const mpiOperatorDescription = "The Kubeflow MPI Operator (`MPIJob`, `kubeflow.org/v2beta1`), installed from its release's manifest file " +
	"`deploy/v2beta1/mpi-operator.yaml` — the Namespace, the CRD `mpijobs.kubeflow.org`, RBAC and the operator's Deployment; " +
	"upstream ships no chart — by server-side apply with the provider's field manager. Install and upgrade are atomic like " +
	"the chart installs': Namespaces and the CRD first, then the rest, then a wait until the CRD is Established and the " +
	"Deployment available; a failed install is removed, a failed upgrade applies the previous objects again. What was applied " +
	"is recorded in the Secret `aiplatform.manifests.mpi-operator` in the namespace (as Helm records a release), so refresh, " +
	"import and destroy work from the cluster. Every refresh compares each applied object with the live cluster (`drift`).\n\n" +
	"**One per cluster**: the CRD, ClusterRoles and ClusterRoleBinding have fixed names, and two controllers of MPIJobs each " +
	"create a launcher per job. The plan fails when another MPI Operator (a Deployment `mpi-operator` in another namespace, or a " +
	"second `aiplatform_mpi_operator` in the configuration) or a Kubeflow training-operator v1 with its MPIJob controller on " +
	"(Deployment `training-operator` without `--enable-scheme`, or with `--enable-scheme=mpijob`) is present, naming both.\n\n" +
	"The default source is the release's file on GitHub (`https://raw.githubusercontent.com/kubeflow/mpi-operator/<version>/deploy/v2beta1/mpi-operator.yaml`); " +
	"a cluster whose Terraform host has no route there sets `manifests = { path = … }` to a local copy, e.g. the file in the Go " +
	"module cache (`go mod download -json github.com/kubeflow/mpi-operator@v0.8.2` prints its `Dir`), which is what the provider's " +
	"tests use: the URL itself was not reached by them (they run offline). An operator installed before with `kubectl apply` is " +
	"taken over by the first apply (its objects are applied with force); one installed by this resource is imported by its namespace."

func mpiOperatorAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"id": schema.StringAttribute{Computed: true, MarkdownDescription: "The namespace; also the import ID.",
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
		"namespace": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(manifests.MPIOperatorNamespace),
			MarkdownDescription: "Namespace of the operator, created by the install (and deleted by destroy unless it existed before). " +
				"The file fixes `mpi-operator`; another name is written into the Namespace object, the ServiceAccount, the " +
				"ClusterRoleBinding's subject, the Deployment and the operator's `--lock-namespace` flag. Default `\"mpi-operator\"`. " +
				"Changing it replaces the install.",
			Validators:    []validator.String{validators.DNSLabel()},
			PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
		"version": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(manifests.MPIOperatorVersion),
			MarkdownDescription: "Release of the MPI Operator (a tag of github.com/kubeflow/mpi-operator). The file's operator image " +
				"tag must be this version. Changing it upgrades the install in place (v0.8.0 → v0.8.2 is tested under a running MPIJob: " +
				"the job and its pods are kept; the two releases' files differ only in the image). Default `\"" + manifests.MPIOperatorVersion + "\"`.",
			Validators: []validator.String{nonEmpty{}}},
		"manifests": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "Where the manifest file comes from: `url`, or `path`, a local file. Default: the release's file on GitHub for `version`.",
			Attributes: map[string]schema.Attribute{
				"url":  schema.StringAttribute{Optional: true, MarkdownDescription: "URL of the file (`https://…`).", Validators: []validator.String{nonEmpty{}}},
				"path": schema.StringAttribute{Optional: true, MarkdownDescription: "Local file, e.g. `deploy/v2beta1/mpi-operator.yaml` of the module in the Go module cache.", Validators: []validator.String{nonEmpty{}}},
			}},
		"image": schema.StringAttribute{Optional: true, Computed: true,
			MarkdownDescription: "Image of the operator's container, e.g. a mirror of `mpioperator/mpi-operator:0.8.2`. Default: the file's image.",
			Validators:          []validator.String{nonEmpty{}}},
		"remove_crds": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			MarkdownDescription: "Delete the CRD `mpijobs.kubeflow.org` — and with it every MPIJob — on destroy. Default `false`: the CRD stays."},
		"drift": schema.ListAttribute{ElementType: types.StringType, Computed: true,
			MarkdownDescription: "Fields of the applied objects that differ in the cluster from what was applied, as " +
				"`Kind/namespace/name: field live → applied` (or `: deleted from the cluster`), computed at every refresh: each object is compared with the live one " +
				"(read with one listing per kind), and one that may differ is server-side applied in dry-run mode. Any drift plans an update that applies the objects again; the plan shows it as `drift` becoming `[]`."},
	}
}

func validateMPIOperator(m *mpiOperatorModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if s := m.Manifests; s != nil {
		switch {
		case !s.URL.IsNull() && !s.Path.IsNull():
			diags.AddAttributeError(path.Root("manifests"), "Conflicting manifest source", "manifests: set either url or path, not both.")
		case s.URL.IsNull() && s.Path.IsNull():
			diags.AddAttributeError(path.Root("manifests"), "Empty manifest source",
				"manifests: set url or path (or leave manifests out for the release's file on GitHub).")
		case !s.URL.IsNull() && !s.URL.IsUnknown() && !strings.HasPrefix(s.URL.ValueString(), "https://") && !strings.HasPrefix(s.URL.ValueString(), "http://"):
			diags.AddAttributeError(path.Root("manifests").AtName("url"), "Invalid manifests URL",
				fmt.Sprintf("manifests.url %q is not an http(s) URL (for a local file set manifests.path).", s.URL.ValueString()))
		}
	}
	if !m.Image.IsNull() && !m.Image.IsUnknown() {
		if img := m.Image.ValueString(); strings.ContainsAny(img, " \t\n") || strings.HasSuffix(img, ":") || strings.HasPrefix(img, "-") {
			diags.AddAttributeError(path.Root("image"), "Invalid image", fmt.Sprintf("image %q is not an image reference", img))
		}
	}
	if !m.Version.IsNull() && !m.Version.IsUnknown() && m.Version.ValueString() != "" {
		if errs := validation.IsValidLabelValue(m.Version.ValueString()); len(errs) > 0 || !strings.HasPrefix(m.Version.ValueString(), "v") {
			diags.AddAttributeError(path.Root("version"), "Invalid version",
				fmt.Sprintf("version %q is not a release tag of the MPI Operator such as %q", m.Version.ValueString(), manifests.MPIOperatorVersion))
		}
	}
	return diags
}

// source is where m's manifest file comes from.
func (m *mpiOperatorModel) source() manifests.Source {
	if s := m.Manifests; s != nil {
		if !s.Path.IsNull() {
			return manifests.Source{Path: s.Path.ValueString()}
		}
		if !s.URL.IsNull() {
			return manifests.Source{URL: s.URL.ValueString()}
		}
	}
	return manifests.Source{URL: manifests.MPIOperatorURL(m.Version.ValueString())}
}

// sourcePath is the attribute a problem with the source is reported at.
func (m *mpiOperatorModel) sourcePath() path.Path {
	if s := m.Manifests; s != nil {
		if !s.Path.IsNull() {
			return path.Root("manifests").AtName("path")
		}
		return path.Root("manifests").AtName("url")
	}
	return path.Root("version")
}

// render reads and renders m's manifest file. image is the configured
// image ("" for the file's).
func (m *mpiOperatorModel) render(ctx context.Context, image string) (manifests.Rendered, diag.Diagnostics) {
	var diags diag.Diagnostics
	src := m.source()
	at := m.sourcePath()
	data, err := manifests.Load(ctx, src)
	if err != nil {
		diags.AddAttributeError(at, "Cannot read the MPI Operator's manifests", fmt.Sprintf("%s: %v", at, err))
		return manifests.Rendered{}, diags
	}
	parsed, err := manifests.Parse(data)
	if err != nil {
		diags.AddAttributeError(at, "Invalid MPI Operator manifests", fmt.Sprintf("%s: %s: %v", at, src, err))
		return manifests.Rendered{}, diags
	}
	out, err := manifests.RenderMPIOperator(parsed, m.Version.ValueString(), manifests.MPIOperatorOptions{Namespace: m.Namespace.ValueString(), Image: image})
	if err != nil {
		diags.AddAttributeError(at, "Unusable MPI Operator manifests", fmt.Sprintf("%s: %s: %v", at, src, err))
	}
	return out, diags
}

func (m *mpiOperatorModel) known() bool {
	if m.Namespace.IsUnknown() || m.Version.IsUnknown() {
		return false
	}
	return m.Manifests == nil || (!m.Manifests.URL.IsUnknown() && !m.Manifests.Path.IsUnknown())
}

// planMPIOperator plans image: the configured one, else the file's (read
// at plan time, which also checks the file).
func planMPIOperator(ctx context.Context, cfg tfsdk.Config, m *mpiOperatorModel) diag.Diagnostics {
	var cfgImage types.String
	diags := cfg.GetAttribute(ctx, path.Root("image"), &cfgImage)
	if cfgImage.IsNull() {
		m.Image = types.StringUnknown()
	}
	if m.known() && !cfgImage.IsUnknown() {
		out, ds := m.render(ctx, cfgImage.ValueString())
		if diags.Append(ds...); ds.HasError() {
			return diags
		}
		m.Image = types.StringValue(out.Image)
	}
	return diags
}

// sameInstall says whether the plan applies what the state says is applied.
func sameInstall(plan, prior *mpiOperatorModel) bool {
	return plan.Version.Equal(prior.Version) && plan.Image.Equal(prior.Image) && plan.source() == prior.source()
}

// record renders m's manifest file into what an apply records.
// configuredImage is the image the configuration sets ("" for the file's).
func (m *mpiOperatorModel) record(ctx context.Context, configuredImage string) (manifests.Record, diag.Diagnostics) {
	out, diags := m.render(ctx, configuredImage)
	if diags.HasError() {
		return manifests.Record{}, diags
	}
	return manifests.Record{
		Version: m.Version.ValueString(), Source: manifests.SourceString(m.source()), Image: out.Image, Objects: out.Objects,
	}, diags
}

// configuredImage is the image the configuration sets ("" for the file's).
func configuredImage(ctx context.Context, cfg tfsdk.Config) string {
	var img types.String
	cfg.GetAttribute(ctx, path.Root("image"), &img)
	return img.ValueString()
}

// mpiOperatorFromRecord sets image (and, importing, where the file came
// from) from the record.
func mpiOperatorFromRecord(m *mpiOperatorModel, rec *manifests.Record, importing bool) {
	if importing {
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
	m.Image = types.StringValue(rec.Image)
}
