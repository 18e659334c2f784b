// Package modelcache is aiplatform_model_cache: model weights fetched once
// into a shared volume (a PersistentVolumeClaim filled by a warm-up Job) or
// onto the local disk of every node of a GPU pool (a DaemonSet), so inference
// replicas mount them read-only and start in seconds; and, for the serving
// resources, how to mount a cache and size a startup probe (mount.go).
package modelcache

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
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
	corev1 "k8s.io/api/core/v1"

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

	ClaimName      types.String   `tfsdk:"claim_name"`
	SubPath        types.String   `tfsdk:"sub_path"`
	WarmedRevision types.String   `tfsdk:"warmed_revision"`
	WarmedAt       types.String   `tfsdk:"warmed_at"`
	SizeBytes      types.Int64    `tfsdk:"size_bytes"`
	Timeouts       timeouts.Value `tfsdk:"timeouts"`
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

func (r *modelCache) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	secretKeys := make([]string, 0, len(Schemes))
	for _, s := range Schemes {
		secretKeys = append(secretKeys, fmt.Sprintf("`%s://` %s", s, SecretKeys[s]))
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: description,
		// Create and update wait as long as `timeout` (the warm-up Job's deadline) allows.
		Blocks: map[string]schema.Block{"timeouts": object.TimeoutsBlock(ctx, "model cache (its warm-up Jobs, its DaemonSet, its claim unless retained)", 0, deleteTimeout)},
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
				MarkdownDescription: "The warmed revision's directory inside the claim or `host_path`. Mode `pvc`: consumers mount the claim with " +
					"volumeMount `subPath: <sub_path>`. Mode `node_local`: consumers mount the hostPath `<host_path>/<sub_path>` itself " +
					"(type `Directory`), with no `subPath`. See *Mounting the cache* on this page."},
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
			if err := validators.AbsolutePath(v.ValueString(), "hold a cache"); err != nil {
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
