package training

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	tfpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// Kinds of store and defaults.
const (
	KindPVC         = "pvc"
	KindObjectStore = "object_store"

	AccessRWX = "ReadWriteMany"
	AccessRWO = "ReadWriteOnce"

	DefaultMountPath   = "/checkpoints"
	DefaultBackupImage = "busybox:1.37.0"
	DefaultRetention   = 7

	// EnvDir, EnvURI and EnvEndpoint are the variables runtimes read.
	EnvDir      = "CHECKPOINT_DIR"
	EnvURI      = "CHECKPOINT_URI"
	EnvEndpoint = "CHECKPOINT_ENDPOINT"
)

// URISchemes are the object stores a location may name.
var URISchemes = []string{"s3", "gs", "az", "abfs", "hdfs"}

type storeModel struct {
	object.NamespacedMeta
	Kind              types.String      `tfsdk:"kind"`
	Size              types.String      `tfsdk:"size"`
	StorageClass      types.String      `tfsdk:"storage_class"`
	AccessMode        types.String      `tfsdk:"access_mode"`
	RetainOnDestroy   types.Bool        `tfsdk:"retain_on_destroy"`
	Labels            types.Map         `tfsdk:"labels"`
	MountPath         types.String      `tfsdk:"mount_path"`
	URI               types.String      `tfsdk:"uri"`
	Endpoint          types.String      `tfsdk:"endpoint"`
	CredentialsSecret *credentialsModel `tfsdk:"credentials_secret"`
	Backup            *backupModel      `tfsdk:"backup"`

	ClaimName     types.String   `tfsdk:"claim_name"`
	ConfigMapName types.String   `tfsdk:"config_map_name"`
	Env           types.Map      `tfsdk:"env"`
	Timeouts      timeouts.Value `tfsdk:"timeouts"`
}

type credentialsModel struct {
	Name types.String `tfsdk:"name"`
	Keys types.List   `tfsdk:"keys"`
}

type backupModel struct {
	Schedule  types.String `tfsdk:"schedule"`
	Retention types.Int64  `tfsdk:"retention"`
	Image     types.String `tfsdk:"image"`
	Size      types.String `tfsdk:"size"`
	ClaimName types.String `tfsdk:"claim_name"`
}

// NewCheckpointStore is aiplatform_checkpoint_store.
func NewCheckpointStore() resource.Resource { return &checkpointStore{} }

type checkpointStore struct{ client *kube.Client }

var (
	_ resource.ResourceWithConfigure      = (*checkpointStore)(nil)
	_ resource.ResourceWithModifyPlan     = (*checkpointStore)(nil)
	_ resource.ResourceWithValidateConfig = (*checkpointStore)(nil)
	_ resource.ResourceWithImportState    = (*checkpointStore)(nil)
)

func (r *checkpointStore) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_checkpoint_store"
}

func (r *checkpointStore) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if c, ok := req.ProviderData.(*kube.Client); ok {
		r.client = c
	}
}

const storeDescription = "Storage for training checkpoints that outlives the jobs writing them. `kind = \"pvc\"` (default): a " +
	"ReadWriteMany PersistentVolumeClaim every node of a multi-node job mounts at `mount_path`; it is **kept** when the store " +
	"is destroyed (`retain_on_destroy`, default true) — destroy forgets it and says so. `kind = \"object_store\"`: a bucket " +
	"location published in a ConfigMap (`CHECKPOINT_URI`, `CHECKPOINT_ENDPOINT`) with credentials only by Secret reference; " +
	"the bucket itself is never touched. An optional `backup` (pvc only) is a CronJob that copies the claim into a backup " +
	"claim, one timestamped directory per run, keeping the newest `retention`. Runtimes consume `claim_name`, `mount_path` " +
	"and `env`."

func (r *checkpointStore) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	useState := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	resp.Schema = schema.Schema{
		MarkdownDescription: storeDescription,
		Blocks:              map[string]schema.Block{"timeouts": object.TimeoutsBlock(ctx, "store (its claim or ConfigMap, its backup CronJob, its claims unless retained)", 0, deleteTimeout)},
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, MarkdownDescription: "`namespace/name`; also the import ID.", PlanModifiers: useState},
			"name": schema.StringAttribute{Required: true,
				MarkdownDescription: "Name of the store: its claim or ConfigMap (a DNS label). Changing it replaces the store.",
				Validators:          []validator.String{validators.DNSLabel()}, PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"namespace": schema.StringAttribute{Required: true,
				MarkdownDescription: "Namespace of the store: the training jobs' namespace (a claim is mounted only in its own). Changing it replaces the store.",
				Validators:          []validator.String{validators.DNSLabel()}, PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"kind": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(KindPVC),
				MarkdownDescription: "`pvc` (default) or `object_store`. Changing it replaces the store.",
				Validators:          []validator.String{stringvalidator.OneOf(KindPVC, KindObjectStore)},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()}},
			"size": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Kind `pvc`, required: the claim's size, e.g. `2Ti` (a checkpoint of a 70B model with " +
					"optimizer state is ~1 TB; keep room for the last few). Growing it expands the claim in place (its " +
					"StorageClass must allow volume expansion); shrinking is refused.",
				Validators: []validator.String{validators.Quantity()}},
			"storage_class": schema.StringAttribute{Optional: true, Computed: true, PlanModifiers: append(useState, stringplanmodifier.RequiresReplaceIfConfigured()),
				MarkdownDescription: "Kind `pvc`: the claim's StorageClass, default the cluster's default class. It must offer " +
					"ReadWriteMany (NFS, Filestore, EFS, CephFS, Lustre…). Changing it replaces the claim, which is refused at plan " +
					"while `retain_on_destroy` would keep the old claim of the same name."},
			"access_mode": schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Kind `pvc`: `ReadWriteMany` (default: every node of a multi-node job writes its shard) or " +
					"`ReadWriteOnce` (single-node jobs only; warned; no `backup`). Changing it replaces the claim, refused at plan " +
					"while `retain_on_destroy` would keep the old claim of the same name.",
				Validators:    []validator.String{stringvalidator.OneOf(AccessRWX, AccessRWO)},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplaceIfConfigured()}},
			"retain_on_destroy": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "Kind `pvc`: keep the claim (and the backup claim) with its checkpoints when the store is " +
					"destroyed or replaced. Default true: destroy removes the store from state, leaves the claim, and warns naming " +
					"it. Set false, apply, then destroy to delete the checkpoints."},
			"labels": schema.MapAttribute{ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Labels of the claim or ConfigMap.", Validators: []validator.Map{validators.Labels()}},
			"mount_path": schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Kind `pvc`: where runtimes mount the claim, default `" + DefaultMountPath + "` (`" + EnvDir + "` in `env`)."},
			"uri": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Kind `object_store`, required: the location, `<scheme>://<bucket>[/<prefix>]` with scheme one of " +
					strings.Join(URISchemes, ", ") + " (e.g. `s3://ckpt/llama-70b`)."},
			"endpoint": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Kind `object_store`: the store's endpoint for S3-compatible services (MinIO, Ceph RGW), an `http(s)://` URL."},
			"credentials_secret": schema.SingleNestedAttribute{Optional: true,
				MarkdownDescription: "Kind `object_store`: the Secret (in the store's namespace) holding the credentials; only " +
					"its name and key names are recorded, never values. Runtimes reference its keys as environment variables.",
				Attributes: map[string]schema.Attribute{
					"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the Secret.",
						Validators: []validator.String{validators.DNSSubdomain()}},
					"keys": schema.ListAttribute{ElementType: types.StringType, Required: true,
						MarkdownDescription: "Keys of the Secret the runtime needs, e.g. `[\"AWS_ACCESS_KEY_ID\", \"AWS_SECRET_ACCESS_KEY\"]`.",
						Validators: []validator.List{listvalidator.SizeAtLeast(1), listvalidator.UniqueValues(),
							listvalidator.ValueStringsAre(stringvalidator.RegexMatches(envName, "must be a C identifier (letters, digits, _)"))}},
				}},
			"backup": schema.SingleNestedAttribute{Optional: true,
				MarkdownDescription: "Kind `pvc`: a CronJob that copies the claim into a backup claim `<name>-backup`, one " +
					"timestamped directory per run, keeping the newest `retention` (runs never overlap). Copies are file-level: " +
					"a checkpoint written while the copy runs may be partial, so write checkpoints to a temporary name and rename. " +
					"A copy rather than a VolumeSnapshot schedule: it works on any ReadWriteMany storage (NFS-like classes often " +
					"have no CSI snapshots) without snapshot CRDs or a snapshot controller, and a backup is a directory anyone can read.",
				Attributes: map[string]schema.Attribute{
					"schedule": schema.StringAttribute{Required: true,
						MarkdownDescription: "Cron schedule (5 fields or @daily…), in the controller's time zone, e.g. `0 */6 * * *`."},
					"retention": schema.Int64Attribute{Optional: true, Computed: true,
						MarkdownDescription: fmt.Sprintf("Backups kept, at least 1. Default %d.", DefaultRetention),
						Validators:          []validator.Int64{int64validator.AtLeast(1)}},
					"image": schema.StringAttribute{Optional: true, Computed: true,
						MarkdownDescription: "Image with `sh`, `cp`, `ls`, `tail` (e.g. a mirror). Default `" + DefaultBackupImage + "`."},
					"size": schema.StringAttribute{Optional: true, Computed: true,
						MarkdownDescription: "Size of the backup claim, default `size × retention`. Growing it expands in place.",
						Validators:          []validator.String{validators.Quantity()}},
					"claim_name": schema.StringAttribute{Computed: true, MarkdownDescription: "The backup claim."},
				}},

			"claim_name":      schema.StringAttribute{Computed: true, MarkdownDescription: "Kind `pvc`: the claim runtimes mount."},
			"config_map_name": schema.StringAttribute{Computed: true, MarkdownDescription: "Kind `object_store`: the ConfigMap runtimes take `env` from (`envFrom`)."},
			"env": schema.MapAttribute{ElementType: types.StringType, Computed: true,
				MarkdownDescription: "What a runtime passes to its containers: `" + EnvDir + "` (pvc) or `" + EnvURI + "` and `" +
					EnvEndpoint + "` (object_store)."},
		},
	}
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var (
	pKind      = tfpath.Root("kind")
	pSize      = tfpath.Root("size")
	pURI       = tfpath.Root("uri")
	pAccess    = tfpath.Root("access_mode")
	pBackup    = tfpath.Root("backup")
	pSchedule  = pBackup.AtName("schedule")
	pBackupSz  = pBackup.AtName("size")
	pMountPath = tfpath.Root("mount_path")
)

func kindOf(m *storeModel) string {
	if m.Kind.IsNull() {
		return KindPVC
	}
	return m.Kind.ValueString()
}

// validateStore checks a configuration across attributes, without I/O; unknown
// values are skipped (checked again at apply).
func validateStore(m *storeModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if m.Kind.IsUnknown() {
		return diags
	}
	kind := kindOf(m)
	notFor := func(p tfpath.Path) {
		diags.AddAttributeError(p, "Attribute does not apply to this kind of store",
			fmt.Sprintf("%s applies to kind %q only; this store's kind is %q", p, other(kind), kind))
	}
	set := func(v interface{ IsNull() bool }) bool { return !v.IsNull() }
	for k := range object.Strings(m.Labels) {
		if ownLabel(k) {
			diags.AddAttributeError(tfpath.Root("labels").AtMapKey(k), "Reserved label",
				fmt.Sprintf("%s is set by the provider on every object of the store", k))
		}
	}
	switch kind {
	case KindPVC:
		if m.Size.IsNull() {
			diags.AddAttributeError(pSize, "Missing size", "kind \"pvc\" needs the claim's size, e.g. size = \"2Ti\"")
		} else if object.Known(m.Size) {
			if q, err := validators.ParseQuantity(m.Size.ValueString()); err == nil && q.Sign() <= 0 {
				diags.AddAttributeError(pSize, "Invalid size", fmt.Sprintf("%q: a claim's size must be positive", m.Size.ValueString()))
			}
		}
		if set(m.URI) {
			notFor(pURI)
		}
		if set(m.Endpoint) {
			notFor(tfpath.Root("endpoint"))
		}
		if m.CredentialsSecret != nil {
			notFor(tfpath.Root("credentials_secret"))
		}
		if object.Known(m.MountPath) {
			if err := validators.AbsolutePath(m.MountPath.ValueString(), "be a mount point"); err != nil {
				diags.AddAttributeError(pMountPath, "Invalid mount_path", err.Error())
			}
		}
		if m.Backup != nil {
			if object.Known(m.Backup.Schedule) {
				if err := CheckCron(m.Backup.Schedule.ValueString()); err != nil {
					diags.AddAttributeError(pSchedule, "Invalid schedule", err.Error())
				}
			}
			if object.Known(m.AccessMode) && m.AccessMode.ValueString() == AccessRWO {
				diags.AddAttributeError(pBackup, "Backup of a ReadWriteOnce claim",
					"a ReadWriteOnce claim is mounted by one node at a time: the backup pod could not mount it while a job "+
						"trains on another node. Use access_mode = \"ReadWriteMany\" or remove backup.")
			}
			if object.Known(m.Backup.Size) {
				if q, err := validators.ParseQuantity(m.Backup.Size.ValueString()); err == nil && q.Sign() <= 0 {
					diags.AddAttributeError(pBackupSz, "Invalid size", fmt.Sprintf("%q: a claim's size must be positive", m.Backup.Size.ValueString()))
				}
			}
			if object.Known(m.Backup.Image) && strings.TrimSpace(m.Backup.Image.ValueString()) == "" {
				diags.AddAttributeError(pBackup.AtName("image"), "Invalid image", "image is empty: remove it for the default "+DefaultBackupImage)
			}
		}
	case KindObjectStore:
		if m.URI.IsNull() {
			diags.AddAttributeError(pURI, "Missing uri", "kind \"object_store\" needs the location, e.g. uri = \"s3://ckpt/llama-70b\"")
		} else if object.Known(m.URI) {
			if err := CheckURI(m.URI.ValueString()); err != nil {
				diags.AddAttributeError(pURI, "Invalid uri", err.Error())
			}
		}
		if object.Known(m.Endpoint) {
			if u, err := url.Parse(m.Endpoint.ValueString()); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				diags.AddAttributeError(tfpath.Root("endpoint"), "Invalid endpoint",
					fmt.Sprintf("%q is not an http:// or https:// URL with a host", m.Endpoint.ValueString()))
			}
		}
		for name, v := range map[string]interface{ IsNull() bool }{"size": m.Size, "storage_class": m.StorageClass, "access_mode": m.AccessMode, "mount_path": m.MountPath} {
			if set(v) {
				notFor(tfpath.Root(name))
			}
		}
		if m.Backup != nil {
			notFor(pBackup)
		}
	}
	return diags
}

func other(kind string) string {
	if kind == KindPVC {
		return KindObjectStore
	}
	return KindPVC
}

// CheckURI reports why s is not an object-store location.
func CheckURI(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URI: %v", s, err)
	}
	known := false
	for _, sc := range URISchemes {
		known = known || u.Scheme == sc
	}
	switch {
	case !known:
		return fmt.Errorf("%q: scheme %q is not one of %s (write <scheme>://<bucket>/<prefix>)", s, u.Scheme, strings.Join(URISchemes, ", "))
	case u.Host == "":
		return fmt.Errorf("%q names no bucket (write %s://<bucket>/<prefix>)", s, u.Scheme)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return fmt.Errorf("%q: a location has no query, fragment or user; put credentials in credentials_secret", s)
	}
	return nil
}

func (r *checkpointStore) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m storeModel
	if d := req.Config.Get(ctx, &m); d.HasError() {
		return // values unknown until apply: validated again then
	}
	resp.Diagnostics.Append(object.WithPaths(validateStore(&m))...)
}
