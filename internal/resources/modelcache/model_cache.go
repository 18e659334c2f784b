// Package modelcache is aiplatform_model_cache: model weights fetched once
// into a shared volume (a PersistentVolumeClaim filled by a warm-up Job) or
// onto the local disk of every node of a GPU pool (a DaemonSet), so inference
// replicas mount them read-only and start in seconds; and, for the serving
// resources, how to mount a cache and size a startup probe (mount.go).
package modelcache

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	tfpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// Defaults.
const (
	DefaultMode         = ModePVC
	DefaultTimeout      = "60m"
	DefaultBackoffLimit = 3
	// DefaultMountRoot + "/" + name is where consumers mount a cache.
	DefaultMountRoot = "/models"
	// DefaultHostRoot + "/<namespace>/<name>" is a node_local cache's directory.
	DefaultHostRoot = "/var/lib/model-cache"
	// deleteTimeout bounds Delete.
	deleteTimeout = 5 * time.Minute
)

// DefaultAccessModes of the claim: many replicas on many nodes mount it.
var DefaultAccessModes = []string{string(corev1.ReadWriteMany)}

type cacheModel struct {
	ID              types.String `tfsdk:"id"`
	Name            types.String `tfsdk:"name"`
	Namespace       types.String `tfsdk:"namespace"`
	Source          *sourceModel `tfsdk:"source"`
	Mode            types.String `tfsdk:"mode"`
	Size            types.String `tfsdk:"size"`
	StorageClass    types.String `tfsdk:"storage_class"`
	AccessModes     types.List   `tfsdk:"access_modes"`
	RetainOnDestroy types.Bool   `tfsdk:"retain_on_destroy"`
	NodeSelector    types.Map    `tfsdk:"node_selector"`
	HostPath        types.String `tfsdk:"host_path"`
	MountPath       types.String `tfsdk:"mount_path"`
	Downloader      types.Object `tfsdk:"downloader"`
	PodAnnotations  types.Map    `tfsdk:"pod_annotations"`
	BackoffLimit    types.Int64  `tfsdk:"backoff_limit"`
	Timeout         types.String `tfsdk:"timeout"`

	ClaimName      types.String `tfsdk:"claim_name"`
	SubPath        types.String `tfsdk:"sub_path"`
	WarmedRevision types.String `tfsdk:"warmed_revision"`
	WarmedAt       types.String `tfsdk:"warmed_at"`
	SizeBytes      types.Int64  `tfsdk:"size_bytes"`
}

type sourceModel struct {
	URI       types.String    `tfsdk:"uri"`
	Revision  types.String    `tfsdk:"revision"`
	SecretRef *secretRefModel `tfsdk:"secret_ref"`
}

type secretRefModel struct {
	Name types.String `tfsdk:"name"`
}

type downloaderModel struct {
	Image   types.String `tfsdk:"image"`
	Command types.List   `tfsdk:"command"`
	Args    types.List   `tfsdk:"args"`
}

var downloaderTypes = map[string]attr.Type{
	"image":   types.StringType,
	"command": types.ListType{ElemType: types.StringType},
	"args":    types.ListType{ElemType: types.StringType},
}

// NewModelCache is aiplatform_model_cache.
func NewModelCache() resource.Resource { return &modelCache{} }

type modelCache struct{ client *kube.Client }

var (
	_ resource.ResourceWithConfigure      = (*modelCache)(nil)
	_ resource.ResourceWithModifyPlan     = (*modelCache)(nil)
	_ resource.ResourceWithValidateConfig = (*modelCache)(nil)
	_ resource.ResourceWithImportState    = (*modelCache)(nil)
)

func (r *modelCache) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_model_cache"
}

const description = "Model weights warmed once, mounted read-only by many inference replicas, so they start in seconds " +
	"instead of each pulling tens of GB. `mode = \"pvc\"` fills a PersistentVolumeClaim with a warm-up Job; " +
	"`mode = \"node_local\"` fills a directory on every node of a GPU pool with a DaemonSet. Apply waits until the " +
	"weights are in place; a new `revision` is fetched beside the old one (consumers switch when it is complete) " +
	"without replacing the claim. The warmed state is recorded on the claim or DaemonSet, so a refresh compares " +
	"against the cluster and the warm-up Job may be garbage-collected."

func strList(desc string) schema.ListAttribute {
	return schema.ListAttribute{ElementType: types.StringType, Optional: true, Computed: true, MarkdownDescription: desc}
}

func (r *modelCache) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	secretKeys := make([]string, 0, len(Schemes))
	for _, s := range Schemes {
		secretKeys = append(secretKeys, fmt.Sprintf("`%s://` %s", s, SecretKeys[s]))
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: description,
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, MarkdownDescription: "`namespace/name`; also the import ID.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"name": schema.StringAttribute{Required: true,
				MarkdownDescription: "Name of the cache, its claim or DaemonSet (a DNS label). Changing it replaces the cache.",
				Validators:          []validator.String{validators.DNSLabel()}, PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"namespace": schema.StringAttribute{Required: true,
				MarkdownDescription: "Namespace of the cache: the consumers' namespace (a claim is mounted only in its own). Changing it replaces the cache.",
				Validators:          []validator.String{validators.DNSLabel()}, PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"source": schema.SingleNestedAttribute{Required: true,
				MarkdownDescription: "Where the weights come from.",
				Attributes: map[string]schema.Attribute{
					"uri": schema.StringAttribute{Required: true,
						MarkdownDescription: "`hf://<org>/<model>`, `s3://<bucket>/<prefix>`, `gs://<bucket>/<prefix>`, " +
							"`oci://<registry>/<repository>[:<tag>|@sha256:<digest>]` (an artifact pulled with ORAS), or " +
							"`https://…` (one file; `.tar`, `.tar.gz`, `.tgz` are unpacked)."},
					"revision": schema.StringAttribute{Optional: true,
						MarkdownDescription: "What to fetch: a Hugging Face branch, tag or commit (default `main`); an OCI tag or " +
							"`sha256:` digest when the URI names none (default `latest`). For buckets and URLs it is a label " +
							"you change to fetch again (default `latest`). A new revision re-warms in place; pin commits for reproducible replicas."},
					"secret_ref": schema.SingleNestedAttribute{Optional: true,
						MarkdownDescription: "A Secret in the cache's namespace whose keys become the downloader's environment " +
							"(`envFrom`) and files under `" + SecretDir + "`. Credentials are never inline. The default downloaders read " +
							strings.Join(secretKeys, "; ") + ".",
						Attributes: map[string]schema.Attribute{
							"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the Secret.",
								Validators: []validator.String{validators.DNSSubdomain()}},
						}},
				}},
			"mode": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(DefaultMode),
				MarkdownDescription: "`pvc` (default): a PersistentVolumeClaim filled by a warm-up Job. `node_local`: a hostPath " +
					"directory on every node of `node_selector`, filled by a DaemonSet's init containers. Changing it replaces the cache.",
				Validators:    []validator.String{stringvalidator.OneOf(ModePVC, ModeNodeLocal)},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"size": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Mode `pvc`, required: the claim's size, e.g. `300Gi`. Allow two revisions (the previous one is " +
					"kept until the next warm-up). Changing it replaces the claim.",
				Validators: []validator.String{validators.Quantity()}},
			"storage_class": schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Mode `pvc`: the claim's StorageClass; default the cluster's default class. It must offer the " +
					"access modes (ReadWriteMany: NFS, Filestore, EFS, CephFS, Lustre…). Changing it replaces the claim."},
			"access_modes": schema.ListAttribute{ElementType: types.StringType, Optional: true, Computed: true,
				MarkdownDescription: "Mode `pvc`: the claim's access modes, default `[\"ReadWriteMany\"]` (replicas on many nodes). " +
					"Changing them replaces the claim.",
				Validators: []validator.List{listvalidator.SizeAtLeast(1), listvalidator.UniqueValues(), listvalidator.ValueStringsAre(
					stringvalidator.OneOf("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"))}},
			"retain_on_destroy": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Mode `pvc`: keep the claim (and the weights) when the cache is destroyed. Default false."},
			"node_selector": schema.MapAttribute{ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Mode `node_local`, required: the labels of the nodes to warm, e.g. a GPU pool's selector. " +
					"The DaemonSet tolerates every taint, so tainted GPU nodes are included.",
				Validators: []validator.Map{mapvalidator.SizeAtLeast(1), validators.Labels()}},
			"host_path": schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Mode `node_local`: the cache's directory on each node, default `" + DefaultHostRoot + "/<namespace>/<name>`. " +
					"Revisions are subdirectories (`sub_path`)."},
			"mount_path": schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Where consumers mount the warmed revision, default `" + DefaultMountRoot + "/<name>`."},
			"downloader": schema.SingleNestedAttribute{Optional: true, Computed: true,
				MarkdownDescription: "The container that fetches the weights into `$MODEL_CACHE_DIR`. Default per scheme: " +
					"`hf://` " + code(DefaultDownloader(SchemeHF).Image) + " with `hf download`; `s3://` " + code(DefaultDownloader(SchemeS3).Image) +
					" with `aws s3 sync`; `gs://` " + code(DefaultDownloader(SchemeGS).Image) + " with `gcloud storage rsync`; `oci://` " +
					code(DefaultDownloader(SchemeOCI).Image) + " with `oras pull`; `https://` " + code(DefaultDownloader(SchemeHTTPS).Image) +
					" with `wget`. Override any part, e.g. a mirrored image. It sees `MODEL_URI`, `MODEL_REVISION`, `MODEL_CACHE_DIR`, " +
					"`MODEL_REPO` (hf), `MODEL_BUCKET` and `MODEL_PREFIX` (s3, gs), `MODEL_REF` (oci), `MODEL_URL` (https). Lines with " +
					"`bytes=N` or `files=N` in its log are reported as progress.",
				Attributes: map[string]schema.Attribute{
					"image":   schema.StringAttribute{Optional: true, Computed: true, MarkdownDescription: "Image of the downloader."},
					"command": strList("Entrypoint, e.g. `[\"sh\", \"-c\", \"…\"]`."),
					"args":    strList("Arguments."),
				}},
			"pod_annotations": schema.MapAttribute{ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Annotations of the warm-up pods (e.g. to keep a service mesh's sidecar out).",
				Validators:          []validator.Map{mapvalidator.KeysAre(validators.QualifiedName())}},
			"backoff_limit": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(DefaultBackoffLimit),
				MarkdownDescription: fmt.Sprintf("Retries of a failing warm-up (the Job's backoffLimit; restarts of a node_local pod) before the apply fails. Default %d.", DefaultBackoffLimit),
				Validators:          []validator.Int64{int64validator.Between(0, 100)}},
			"timeout": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(DefaultTimeout),
				MarkdownDescription: "How long a warm-up may take (a Go duration, e.g. `90m`); the Job's activeDeadlineSeconds. Default `" + DefaultTimeout + "`."},

			"claim_name": schema.StringAttribute{Computed: true, MarkdownDescription: "Mode `pvc`: the claim consumers mount."},
			"sub_path": schema.StringAttribute{Computed: true,
				MarkdownDescription: "The warmed revision's directory inside the claim or `host_path`: consumers mount it (volumeMount `subPath`)."},
			"warmed_revision": schema.StringAttribute{Computed: true, MarkdownDescription: "The revision in place: `revision` or the scheme's default."},
			"warmed_at":       schema.StringAttribute{Computed: true, MarkdownDescription: "When the warm-up finished (RFC 3339)."},
			"size_bytes":      schema.Int64Attribute{Computed: true, MarkdownDescription: "Size of the warmed revision, when the warm-up reported it."},
		},
	}
}

func code(s string) string { return "`" + s + "`" }

func (r *modelCache) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if c, ok := req.ProviderData.(*kube.Client); ok {
		r.client = c
	}
}

var (
	pSource     = tfpath.Root("source")
	pURI        = pSource.AtName("uri")
	pRevision   = pSource.AtName("revision")
	pDownloader = tfpath.Root("downloader")
)

// validate checks the configuration across attributes, without I/O. Unknown
// values are skipped (they are checked again at apply).
func validate(m *cacheModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if m.Source != nil && object.Known(m.Source.URI) {
		src, err := ParseSource(m.Source.URI.ValueString())
		if err != nil {
			diags.AddAttributeError(pURI, "Unsupported model source", err.Error())
		} else if object.Known(m.Source.Revision) {
			if err := src.CheckRevision(m.Source.Revision.ValueString()); err != nil {
				diags.AddAttributeError(pRevision, "Invalid revision", err.Error())
			}
		}
	}
	if m.Source != nil && m.Source.Revision.ValueString() == "" && object.Known(m.Source.Revision) {
		diags.AddAttributeError(pRevision, "Invalid revision", "revision is empty: remove it for the scheme's default, or name a branch, tag or commit")
	}
	mode := m.Mode.ValueString()
	if m.Mode.IsNull() {
		mode = DefaultMode
	}
	onlyIn := func(p tfpath.Path, want string) {
		diags.AddAttributeError(p, "Attribute does not apply to this mode",
			fmt.Sprintf("%s applies to mode %q only; this cache's mode is %q", p, want, mode))
	}
	switch {
	case m.Mode.IsUnknown():
	case mode == ModePVC:
		if m.Size.IsNull() {
			diags.AddAttributeError(tfpath.Root("size"), "Missing size", "mode \"pvc\" needs the claim's size, e.g. size = \"300Gi\" (allow room for two revisions)")
		}
		if !m.NodeSelector.IsNull() {
			onlyIn(tfpath.Root("node_selector"), ModeNodeLocal)
		}
		if !m.HostPath.IsNull() {
			onlyIn(tfpath.Root("host_path"), ModeNodeLocal)
		}
	case mode == ModeNodeLocal:
		if m.NodeSelector.IsNull() {
			diags.AddAttributeError(tfpath.Root("node_selector"), "Missing node_selector",
				"mode \"node_local\" warms the nodes of node_selector, e.g. node_selector = aiplatform_gpu_node_pool.h100.selector")
		}
		for name, v := range map[string]attr.Value{"size": m.Size, "storage_class": m.StorageClass, "access_modes": m.AccessModes} {
			if !v.IsNull() && !v.IsUnknown() {
				onlyIn(tfpath.Root(name), ModePVC)
			}
		}
		if object.Known(m.RetainOnDestroy) && m.RetainOnDestroy.ValueBool() {
			onlyIn(tfpath.Root("retain_on_destroy"), ModePVC)
		}
	}
	for name, v := range map[string]types.String{"host_path": m.HostPath, "mount_path": m.MountPath} {
		if object.Known(v) {
			if err := checkAbsolute(v.ValueString()); err != nil {
				diags.AddAttributeError(tfpath.Root(name), "Invalid path", err.Error())
			}
		}
	}
	if object.Known(m.Timeout) {
		if _, err := parseTimeout(m.Timeout.ValueString()); err != nil {
			diags.AddAttributeError(tfpath.Root("timeout"), "Invalid timeout", err.Error())
		}
	}
	if object.Known(m.Downloader) {
		var d downloaderModel
		if m.Downloader.As(context.Background(), &d, basetypes.ObjectAsOptions{UnhandledUnknownAsEmpty: true}) == nil {
			if object.Known(d.Image) && strings.TrimSpace(d.Image.ValueString()) == "" {
				diags.AddAttributeError(pDownloader.AtName("image"), "Invalid image", "image is empty: remove it for the scheme's default image")
			}
			if object.Known(d.Command) && len(d.Command.Elements()) == 0 {
				diags.AddAttributeError(pDownloader.AtName("command"), "Invalid command", "command is empty: remove it for the image's entrypoint or the scheme's default")
			}
			if object.Known(d.Args) && len(d.Args.Elements()) == 0 {
				diags.AddAttributeError(pDownloader.AtName("args"), "Invalid args", "args is empty: remove it")
			}
		}
	}
	return diags
}

func checkAbsolute(p string) error {
	switch {
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q is not an absolute path", p)
	case path.Clean(p) != p:
		return fmt.Errorf("%q is not a clean path (write %q)", p, path.Clean(p))
	case p == "/":
		return fmt.Errorf("%q: the root directory cannot hold a cache", p)
	case strings.ContainsAny(p, ":\x00\n"):
		return fmt.Errorf("%q contains ':' or a control character", p)
	}
	return nil
}

// Bounds of a warm-up timeout.
const (
	minTimeout = time.Minute
	maxTimeout = 7 * 24 * time.Hour
)

func parseTimeout(s string) (time.Duration, error) {
	return validators.ParseDuration(s, minTimeout, maxTimeout)
}

func (r *modelCache) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m cacheModel
	if d := req.Config.Get(ctx, &m); d.HasError() {
		return // values unknown until apply: validated again then
	}
	resp.Diagnostics.Append(object.WithPaths(validate(&m))...)
}

// downloaderOf returns the configured downloader with the scheme's defaults
// for whatever is null or unknown; ok is false when the URI is not known yet.
func downloaderOf(ctx context.Context, m *cacheModel) (Downloader, bool) {
	if m.Source == nil || !object.Known(m.Source.URI) {
		return Downloader{}, false
	}
	src, err := ParseSource(m.Source.URI.ValueString())
	if err != nil {
		return Downloader{}, false
	}
	def := DefaultDownloader(src.Scheme)
	if !object.Known(m.Downloader) {
		return def, true
	}
	var d downloaderModel
	if m.Downloader.As(ctx, &d, basetypes.ObjectAsOptions{UnhandledNullAsEmpty: true, UnhandledUnknownAsEmpty: true}) != nil {
		return def, true
	}
	out := def
	if object.Known(d.Image) {
		out.Image = d.Image.ValueString()
	}
	if !d.Command.IsUnknown() && !d.Command.IsNull() {
		out.Command = object.ListStrings(d.Command)
	}
	if !d.Args.IsUnknown() && !d.Args.IsNull() {
		out.Args = object.ListStrings(d.Args)
	}
	return out, true
}

func downloaderValue(d Downloader) types.Object {
	return types.ObjectValueMust(downloaderTypes, map[string]attr.Value{
		"image": types.StringValue(d.Image), "command": object.ListValue(d.Command), "args": object.ListValue(d.Args),
	})
}

func defaultHostPath(m *cacheModel) string {
	return DefaultHostRoot + "/" + m.Namespace.ValueString() + "/" + m.Name.ValueString()
}

// resolve turns a fully known plan (or state) into a spec.
func resolve(ctx context.Context, m *cacheModel) (*spec, diag.Diagnostics) {
	var diags diag.Diagnostics
	if m.Source == nil {
		diags.AddAttributeError(pSource, "Missing source", "the cache has no source")
		return nil, diags
	}
	src, err := ParseSource(m.Source.URI.ValueString())
	if err != nil {
		diags.AddAttributeError(pURI, "Unsupported model source", err.Error())
		return nil, diags
	}
	timeout, err := parseTimeout(m.Timeout.ValueString())
	if err != nil {
		diags.AddAttributeError(tfpath.Root("timeout"), "Invalid timeout", err.Error())
		return nil, diags
	}
	d, _ := downloaderOf(ctx, m)
	s := &spec{
		Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString(),
		Mode:              m.Mode.ValueString(),
		Source:            src,
		Revision:          m.Source.Revision.ValueString(),
		EffectiveRevision: src.EffectiveRevision(m.Source.Revision.ValueString()),
		Downloader:        d,
		MountPath:         m.MountPath.ValueString(),
		HostPath:          m.HostPath.ValueString(),
		NodeSelector:      object.Strings(m.NodeSelector),
		PodAnnotations:    object.Strings(m.PodAnnotations),
		BackoffLimit:      m.BackoffLimit.ValueInt64(),
		Timeout:           timeout,
		TimeoutText:       m.Timeout.ValueString(),
		Size:              m.Size.ValueString(),
		StorageClass:      m.StorageClass.ValueString(),
		AccessModes:       object.ListStrings(m.AccessModes),
		RetainOnDestroy:   m.RetainOnDestroy.ValueBool(),
	}
	if m.Source.SecretRef != nil {
		s.SecretRef = m.Source.SecretRef.Name.ValueString()
	}
	s.SubPath = SubPath(src.URI, s.EffectiveRevision)
	if s.Mode == ModePVC && len(s.AccessModes) == 0 {
		s.AccessModes = DefaultAccessModes
	}
	return s, diags
}

// planKey is the warm-up key of a model (see spec.key), "" when not known.
func planKey(m *cacheModel) string {
	if m.Source == nil || !object.Known(m.Source.URI) || m.Source.Revision.IsUnknown() || !object.Known(m.SubPath) {
		return ""
	}
	if m.Mode.ValueString() == ModeNodeLocal {
		if !object.Known(m.HostPath) {
			return ""
		}
		return m.SubPath.ValueString() + "@" + m.HostPath.ValueString()
	}
	return m.SubPath.ValueString()
}

// warmedIn reports whether state holds a completed warm-up.
func warmedIn(m *cacheModel) bool { return m != nil && m.Source != nil && object.Known(m.WarmedAt) }

func (r *modelCache) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	var plan cacheModel
	if d := req.Plan.Get(ctx, &plan); d.HasError() {
		return // whole objects unknown until apply
	}
	var config cacheModel
	if d := req.Config.Get(ctx, &config); d.HasError() {
		return
	}
	var state *cacheModel
	if !req.State.Raw.IsNull() {
		state = &cacheModel{}
		if d := req.State.Get(ctx, state); d.HasError() {
			resp.Diagnostics.Append(d...)
			return
		}
	}
	if object.Known(plan.Namespace) && object.Known(plan.Name) {
		plan.ID = types.StringValue(plan.Namespace.ValueString() + "/" + plan.Name.ValueString())
		if config.MountPath.IsNull() {
			plan.MountPath = types.StringValue(DefaultMountRoot + "/" + plan.Name.ValueString())
		}
	}
	mode := plan.Mode.ValueString()
	sameMode := state != nil && state.Mode.ValueString() == mode
	switch mode {
	case ModePVC:
		if object.Known(plan.Name) {
			plan.ClaimName = plan.Name
		}
		if config.AccessModes.IsNull() {
			plan.AccessModes = object.ListValue(DefaultAccessModes)
		}
		if plan.StorageClass.IsUnknown() && config.StorageClass.IsNull() && sameMode && object.Known(state.StorageClass) {
			plan.StorageClass = state.StorageClass // the class the server defaulted
		}
		plan.HostPath = types.StringNull()
	case ModeNodeLocal:
		plan.ClaimName = types.StringNull()
		if config.AccessModes.IsNull() {
			plan.AccessModes = types.ListNull(types.StringType)
		}
		if config.StorageClass.IsNull() {
			plan.StorageClass = types.StringNull()
		}
		if config.HostPath.IsNull() && object.Known(plan.Namespace) && object.Known(plan.Name) {
			plan.HostPath = types.StringValue(defaultHostPath(&plan))
		}
		resp.Diagnostics.Append(r.warnEmptyPool(ctx, &plan)...)
	}
	// Null in the configuration means the default, whatever state holds
	// (a live object edited out of band shows as a change back).
	withDefaults := config
	withDefaults.Source = plan.Source
	if d, ok := downloaderOf(ctx, &withDefaults); ok {
		plan.Downloader = downloaderValue(d)
	}
	if plan.Source != nil && object.Known(plan.Source.URI) && !plan.Source.Revision.IsUnknown() {
		if src, err := ParseSource(plan.Source.URI.ValueString()); err == nil {
			rev := src.EffectiveRevision(plan.Source.Revision.ValueString())
			plan.SubPath = types.StringValue(SubPath(src.URI, rev))
			plan.WarmedRevision = types.StringValue(rev)
		}
	}
	var replace tfpath.Paths
	if state != nil && sameMode && mode == ModePVC {
		replace = claimReplacements(&plan, &config, state)
	}
	replaced := len(replace) > 0 || (state != nil && (!sameMode || state.ID.ValueString() != plan.ID.ValueString()))
	// What is warmed stays as it is unless the plan fetches something else
	// (or a new claim or DaemonSet is warmed from scratch).
	if key := planKey(&plan); key != "" && !replaced && warmedIn(state) && key == planKey(state) {
		plan.WarmedRevision, plan.WarmedAt, plan.SizeBytes = state.WarmedRevision, state.WarmedAt, state.SizeBytes
	} else {
		plan.WarmedAt, plan.SizeBytes = types.StringUnknown(), types.Int64Unknown()
	}

	resp.RequiresReplace.Append(replace...)
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// claimReplacements are the claim's attributes whose change replaces it:
// size, class and access modes are fixed once a claim is bound.
func claimReplacements(plan, config, state *cacheModel) tfpath.Paths {
	var out tfpath.Paths
	if object.Known(plan.Size) && object.Known(state.Size) {
		p, err1 := validators.ParseQuantity(plan.Size.ValueString())
		s, err2 := validators.ParseQuantity(state.Size.ValueString())
		if err1 != nil || err2 != nil || p.Cmp(s) != 0 {
			out = append(out, tfpath.Root("size"))
		}
	}
	if object.Known(config.StorageClass) && object.Known(state.StorageClass) && config.StorageClass.ValueString() != state.StorageClass.ValueString() {
		out = append(out, tfpath.Root("storage_class"))
	}
	if object.Known(plan.AccessModes) && object.Known(state.AccessModes) {
		a, b := object.ListStrings(plan.AccessModes), object.ListStrings(state.AccessModes)
		sort.Strings(a)
		sort.Strings(b)
		if strings.Join(a, ",") != strings.Join(b, ",") {
			out = append(out, tfpath.Root("access_modes"))
		}
	}
	return out
}

func (r *modelCache) warnEmptyPool(ctx context.Context, m *cacheModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if r.client == nil || !object.Known(m.NodeSelector) {
		return diags
	}
	nodes, err := r.client.Nodes(ctx)
	if err != nil {
		return diags // the apply reports an unreachable cluster
	}
	if len(capacity.Select(nodes, object.Strings(m.NodeSelector))) == 0 {
		diags.AddAttributeWarning(tfpath.Root("node_selector"), "No node to warm",
			"node_selector: no node matches it now, so the DaemonSet has no pod and the apply will not wait for any warm-up. "+
				"Nodes that join the pool later are warmed by the DaemonSet as they arrive.")
	}
	return diags
}

func (r *modelCache) ready(diags *diag.Diagnostics) bool {
	if r.client == nil {
		diags.AddError("Provider not configured", "the aiplatform provider has no cluster configuration")
		return false
	}
	return true
}

// checkReferences fails early, naming the attribute, instead of a pod stuck
// in CreateContainerConfigError (no Secret) or Pending (a claim of a class
// that does not exist) until the timeout.
func (r *modelCache) checkReferences(ctx context.Context, s *spec, creating bool) diag.Diagnostics {
	var diags diag.Diagnostics
	if creating && s.Mode == ModePVC && s.StorageClass != "" {
		found, err := r.client.StorageClassExists(ctx, s.StorageClass)
		switch {
		case err != nil:
			diags.AddAttributeError(tfpath.Root("storage_class"), "Cannot read the StorageClass", err.Error())
		case !found:
			diags.AddAttributeError(tfpath.Root("storage_class"), "The StorageClass does not exist",
				fmt.Sprintf("storage_class: there is no StorageClass %q; the claim would stay Pending until the timeout", s.StorageClass))
		}
	}
	if s.SecretRef == "" {
		return diags
	}
	found, err := r.client.SecretExists(ctx, kube.Ref{Namespace: s.Namespace, Name: s.SecretRef})
	switch {
	case err != nil:
		diags.AddAttributeError(pSource.AtName("secret_ref"), "Cannot read the source's Secret", err.Error())
	case !found:
		diags.AddAttributeError(pSource.AtName("secret_ref"), "The source's Secret does not exist",
			fmt.Sprintf("source.secret_ref: there is no Secret %q in namespace %q; the downloader would wait for it until the timeout", s.SecretRef, s.Namespace))
	}
	return diags
}

func (m *cacheModel) setWarmed(w *warmed) {
	if w == nil {
		m.WarmedRevision, m.WarmedAt, m.SizeBytes = types.StringNull(), types.StringNull(), types.Int64Null()
		return
	}
	m.WarmedRevision = types.StringValue(w.Revision)
	m.WarmedAt = types.StringValue(w.At)
	m.SubPath = types.StringValue(w.SubPath)
	m.SizeBytes = types.Int64Null()
	if w.SizeBytes != nil {
		m.SizeBytes = types.Int64Value(*w.SizeBytes)
	}
}

func newWarmed(s *spec, o outcome, keep string) *warmed {
	return &warmed{Revision: s.EffectiveRevision, SubPath: s.SubPath, At: time.Now().UTC().Format(time.RFC3339), SizeBytes: o.SizeBytes, Keep: keep}
}

// warmedOf is what state says is warmed.
func warmedOf(m *cacheModel) *warmed {
	if !warmedIn(m) {
		return nil
	}
	w := &warmed{Revision: m.WarmedRevision.ValueString(), SubPath: m.SubPath.ValueString(), At: m.WarmedAt.ValueString()}
	if object.Known(m.SizeBytes) {
		n := m.SizeBytes.ValueInt64()
		w.SizeBytes = &n
	}
	return w
}

func (r *modelCache) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m cacheModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || !r.ready(&resp.Diagnostics) {
		return
	}
	s, diags := resolve(ctx, &m)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(r.checkReferences(ctx, s, true)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var o outcome
	var err error
	switch s.Mode {
	case ModePVC:
		live, aerr := r.client.ApplyPersistentVolumeClaim(ctx, s.claim(s.record(nil)))
		if aerr != nil {
			resp.Diagnostics.AddError("Creating the model cache's claim failed", aerr.Error())
			return
		}
		if live.Spec.StorageClassName != nil {
			m.StorageClass = types.StringValue(*live.Spec.StorageClassName)
		} else if m.StorageClass.IsUnknown() {
			m.StorageClass = types.StringNull()
		}
		o, err = warmJob(ctx, r.client, s, "")
	case ModeNodeLocal:
		o, err = warmDaemonSet(ctx, r.client, s, "", s.record(nil))
	}
	if err != nil {
		// The objects exist: record them (Terraform marks the cache tainted,
		// so the next apply replaces it), claiming nothing warmed.
		m.setWarmed(nil)
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		resp.Diagnostics.AddError(fmt.Sprintf("Warming model cache %s failed", s.ref()), err.Error())
		return
	}
	w := newWarmed(s, o, "")
	if d := r.record(ctx, s, w, ""); d.HasError() {
		m.setWarmed(nil)
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		resp.Diagnostics.Append(d...)
		return
	}
	m.setWarmed(w)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// record writes the warmed state on the owning object (for node_local the
// template is unchanged, so no pod restarts).
func (r *modelCache) record(ctx context.Context, s *spec, w *warmed, keep string) diag.Diagnostics {
	var diags diag.Diagnostics
	var err error
	switch s.Mode {
	case ModePVC:
		_, err = r.client.ApplyPersistentVolumeClaim(ctx, s.claim(s.record(w)))
	case ModeNodeLocal:
		_, err = r.client.ApplyDaemonSet(ctx, s.daemonSet(keep, s.record(w)))
	}
	if err != nil {
		diags.AddError(fmt.Sprintf("Recording the warmed state of model cache %s failed", s.ref()), err.Error())
	}
	return diags
}

func (r *modelCache) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m, prior cacheModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() || !r.ready(&resp.Diagnostics) {
		return
	}
	s, diags := resolve(ctx, &m)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(r.checkReferences(ctx, s, false)...)
	if resp.Diagnostics.HasError() {
		return
	}
	rewarm := !warmedIn(&prior) || planKey(&prior) != s.key()
	keep := ""
	if rewarm && warmedIn(&prior) && prior.SubPath.ValueString() != s.SubPath {
		keep = prior.SubPath.ValueString()
	}
	w := warmedOf(&prior)
	switch s.Mode {
	case ModePVC:
		if rewarm {
			o, err := warmJob(ctx, r.client, s, keep)
			if err != nil {
				// State keeps the prior revision (Terraform keeps the prior
				// state on error): the next plan proposes this one again.
				resp.Diagnostics.AddError(fmt.Sprintf("Warming model cache %s failed", s.ref()),
					err.Error()+fmt.Sprintf("\n\nThe cache still holds revision %s.", orNone(prior.WarmedRevision)))
				return
			}
			w = newWarmed(s, o, keep)
		}
	case ModeNodeLocal:
		live, found, err := r.client.GetDaemonSet(ctx, s.ref())
		if err != nil {
			resp.Diagnostics.AddError("Reading the model cache's DaemonSet failed", err.Error())
			return
		}
		var liveRec *record
		if found {
			liveRec = readRecord(live.Annotations)
		}
		liveKeep := ""
		if liveRec != nil && liveRec.Warmed != nil {
			liveKeep = liveRec.Warmed.Keep
		}
		if !rewarm {
			keep = liveKeep
		}
		if liveRec == nil {
			liveRec = s.record(nil)
		}
		o, err := warmDaemonSet(ctx, r.client, s, keep, liveRec)
		if err != nil {
			msg := err.Error() + fmt.Sprintf("\n\nThe cache still holds revision %s", orNone(prior.WarmedRevision))
			if ps, d := resolve(ctx, &prior); !d.HasError() && found {
				if _, rerr := r.client.ApplyDaemonSet(ctx, ps.daemonSet(liveKeep, liveRec)); rerr == nil {
					msg += "; the DaemonSet was set back to its previous template"
				} else {
					msg += fmt.Sprintf("; setting the DaemonSet back to its previous template failed: %v", rerr)
				}
			}
			resp.Diagnostics.AddError(fmt.Sprintf("Warming model cache %s failed", s.ref()), msg+".")
			return
		}
		if rewarm {
			w = newWarmed(s, o, keep)
		} else if w != nil {
			w.Keep = keep
		}
	}
	if d := r.record(ctx, s, w, keep); d.HasError() {
		resp.Diagnostics.Append(d...)
		return
	}
	m.setWarmed(w)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func orNone(v types.String) string {
	if !object.Known(v) {
		return "(none)"
	}
	return v.ValueString()
}

func (r *modelCache) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m cacheModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || !r.ready(&resp.Diagnostics) {
		return
	}
	ref := kube.Ref{Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString()}
	importing := m.Mode.IsNull()
	mode := m.Mode.ValueString()
	var pvc *corev1.PersistentVolumeClaim
	var ds *appsv1.DaemonSet
	if importing || mode == ModePVC {
		live, found, err := r.client.GetPersistentVolumeClaim(ctx, ref)
		if err != nil {
			resp.Diagnostics.AddError(fmt.Sprintf("Reading the claim of model cache %s failed", ref), err.Error())
			return
		}
		if found && (!importing || readRecord(live.Annotations) != nil) {
			pvc, mode = live, ModePVC
		}
	}
	if pvc == nil && (importing || mode == ModeNodeLocal) {
		live, found, err := r.client.GetDaemonSet(ctx, ref)
		if err != nil {
			resp.Diagnostics.AddError(fmt.Sprintf("Reading the DaemonSet of model cache %s failed", ref), err.Error())
			return
		}
		if found && (!importing || readRecord(live.Annotations) != nil) {
			ds, mode = live, ModeNodeLocal
		}
	}
	if pvc == nil && ds == nil {
		if importing {
			resp.Diagnostics.AddError("Model cache not found",
				fmt.Sprintf("Neither a PersistentVolumeClaim nor a DaemonSet %s carries the annotation %s: "+
					"there is no model cache of that name, or it was not made by aiplatform_model_cache.", ref, AnnotationConfig))
			return
		}
		// Deleted out of band: forget it so the plan creates it again.
		resp.State.RemoveResource(ctx)
		return
	}
	m.Mode = types.StringValue(mode)
	m.ID = types.StringValue(ref.String())
	if pvc != nil {
		readClaim(ctx, pvc, &m)
	} else {
		readDaemonSet(ctx, ds, &m)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// fromRecord sets the configuration recorded on the owning object. Without a
// completed warm-up there is no source in place: source becomes null, so the
// plan proposes to warm it.
func fromRecord(rec *record, m *cacheModel) {
	if rec == nil {
		m.Source = nil
		m.setWarmed(nil)
		return
	}
	src := &sourceModel{URI: types.StringValue(rec.URI), Revision: types.StringNull()}
	if rec.Revision != nil {
		src.Revision = types.StringValue(*rec.Revision)
	}
	if rec.SecretRef != "" {
		src.SecretRef = &secretRefModel{Name: types.StringValue(rec.SecretRef)}
	}
	m.Source = src
	m.Downloader = downloaderValue(Downloader{Image: rec.Downloader.Image, Command: rec.Downloader.Command, Args: rec.Downloader.Args})
	m.MountPath = types.StringValue(rec.MountPath)
	m.HostPath = types.StringNull()
	if rec.HostPath != "" {
		m.HostPath = types.StringValue(rec.HostPath)
	}
	m.NodeSelector = object.StringMap(rec.NodeSelector, m.NodeSelector)
	m.PodAnnotations = object.StringMap(rec.PodAnnotations, m.PodAnnotations)
	m.BackoffLimit = types.Int64Value(rec.BackoffLimit)
	m.Timeout = types.StringValue(rec.Timeout)
	m.RetainOnDestroy = types.BoolValue(rec.RetainOnDestroy)
	if rec.Warmed == nil {
		m.Source = nil
		m.setWarmed(nil)
		if uri, err := ParseSource(rec.URI); err == nil {
			m.SubPath = types.StringValue(SubPath(rec.URI, uri.EffectiveRevision(src.Revision.ValueString())))
		}
		return
	}
	m.setWarmed(rec.Warmed)
}

func readClaim(_ context.Context, pvc *corev1.PersistentVolumeClaim, m *cacheModel) {
	fromRecord(readRecord(pvc.Annotations), m)
	m.ClaimName = types.StringValue(pvc.Name)
	m.HostPath = types.StringNull()
	m.NodeSelector = types.MapNull(types.StringType)
	if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		m.Size = object.Quantity(q.String(), m.Size)
	} else {
		m.Size = types.StringNull()
	}
	m.StorageClass = types.StringNull()
	if pvc.Spec.StorageClassName != nil {
		m.StorageClass = types.StringValue(*pvc.Spec.StorageClassName)
	}
	modes := make([]string, len(pvc.Spec.AccessModes))
	for i, a := range pvc.Spec.AccessModes {
		modes[i] = string(a)
	}
	m.AccessModes = object.ListValue(modes)
}

// readDaemonSet sets the recorded configuration, then what the live
// DaemonSet says where it can be edited out of band (nodes, downloader,
// directory), so such an edit shows in the plan. (A failed update sets the
// DaemonSet back, so the live template is never a half-applied one.)
func readDaemonSet(_ context.Context, ds *appsv1.DaemonSet, m *cacheModel) {
	fromRecord(readRecord(ds.Annotations), m)
	m.ClaimName, m.Size, m.StorageClass = types.StringNull(), types.StringNull(), types.StringNull()
	m.AccessModes = types.ListNull(types.StringType)
	pod := ds.Spec.Template.Spec
	m.NodeSelector = object.StringMap(pod.NodeSelector, m.NodeSelector)
	for _, v := range pod.Volumes {
		if v.Name == volumeCache {
			if v.HostPath != nil {
				m.HostPath = types.StringValue(v.HostPath.Path)
			} else {
				m.HostPath = types.StringNull()
			}
		}
	}
	d := Downloader{}
	for _, c := range pod.InitContainers {
		if c.Name == containerDownload {
			d = Downloader{Image: c.Image, Command: c.Command, Args: c.Args}
		}
	}
	m.Downloader = downloaderValue(d)
}

func (r *modelCache) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m cacheModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || !r.ready(&resp.Diagnostics) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, deleteTimeout)
	defer cancel()
	ref := kube.Ref{Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString()}
	if err := r.client.DeleteJobs(ctx, ref.Namespace, LabelName+"="+ref.Name); err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Deleting the warm-up Jobs of model cache %s failed", ref), err.Error())
		return
	}
	switch m.Mode.ValueString() {
	case ModeNodeLocal:
		if err := r.client.DeleteForeground(ctx, kube.DaemonSetKind, ref); err != nil {
			resp.Diagnostics.AddError(fmt.Sprintf("Deleting the DaemonSet of model cache %s failed", ref), err.Error())
		}
	default:
		if m.RetainOnDestroy.ValueBool() {
			tflog.Info(ctx, fmt.Sprintf("model cache %s: keeping the claim %s (retain_on_destroy)", ref, ref))
			return
		}
		if err := r.client.Delete(ctx, kube.PersistentVolumeClaimKind, ref); err != nil {
			resp.Diagnostics.AddError(fmt.Sprintf("Deleting the claim of model cache %s failed", ref), err.Error())
		}
	}
}

func (r *modelCache) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	ref, err := kube.ParseImportID(req.ID, true)
	if err != nil {
		resp.Diagnostics.AddError("Invalid import ID", err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, tfpath.Root("id"), ref.String())...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, tfpath.Root("name"), ref.Name)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, tfpath.Root("namespace"), ref.Namespace)...)
}
