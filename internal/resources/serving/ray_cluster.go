package serving

import (
	"context"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	tfpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/modelcache"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// rayClusterKind is KubeRay's RayCluster.
var rayClusterKind = catalog.RayClusterKind

// rayQueueLabel is the label Kueue reads a workload's LocalQueue from.
const rayQueueLabel = catalog.KueueQueueLabel

const (
	// KubeRay's defaults: worker groups without maxReplicas get MaxInt32, the
	// head service is <cluster>-head-svc, and Ray's ports.
	kuberayMaxReplicas = 2147483647
	rayDashboardPort   = "8265"
	rayClientPort      = "10001"
	rayReadyState      = "ready"
	// rayWaitTimeout is timeouts.create/update's default: how long wait_for_ready waits.
	rayWaitTimeout = 10 * time.Minute
	// rayDefaultImage is the image for ray_version when image is not set.
	rayDefaultImage = "rayproject/ray:"
)

var rayVersionPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+)?([-+.][0-9A-Za-z.+-]+)?$`)

type rayClusterModel struct {
	object.NamespacedMeta
	object.LiveChanges
	rayClusterSpec
	QueueName    types.String `tfsdk:"queue_name"`
	Suspend      types.Bool   `tfsdk:"suspend"`
	WaitForReady types.Bool   `tfsdk:"wait_for_ready"`

	HeadServiceName  types.String `tfsdk:"head_service_name"`
	DashboardAddress types.String `tfsdk:"dashboard_address"`
	ClientAddress    types.String `tfsdk:"client_address"`
	ReadyWorkers     types.Int64  `tfsdk:"ready_workers"`
}

// rayClusterSpec is what a RayCluster and a RayService's rayClusterConfig
// share: the Ray version and image, the head, the worker groups, autoscaling
// and the model cache (the attributes rayClusterSpecAttributes lists).
type rayClusterSpec struct {
	RayVersion   types.String     `tfsdk:"ray_version"`
	Image        types.String     `tfsdk:"image"`
	Head         *rayHead         `tfsdk:"head"`
	WorkerGroups []rayWorkerGroup `tfsdk:"worker_groups"`
	Autoscaling  *rayAutoscaling  `tfsdk:"autoscaling"`
	ModelCache   *modelCacheModel `tfsdk:"model_cache"`
}

// rayClusterSpecAttributes are the attributes of rayClusterSpec, as
// aiplatform_ray_cluster describes them.
func rayClusterSpecAttributes() map[string]schema.Attribute {
	all := rayClusterAttributes()
	out := map[string]schema.Attribute{}
	for _, k := range []string{"ray_version", "image", "head", "worker_groups", "autoscaling", "model_cache"} {
		out[k] = all[k]
	}
	return out
}

// rayPod is what the head and every worker group say about their pods: the
// Ray container (named container_name, filled from cpu, memory and gpus) and
// the rest of the pod template.
type rayPod struct {
	ContainerName types.String          `tfsdk:"container_name"`
	CPU           types.String          `tfsdk:"cpu"`
	Memory        types.String          `tfsdk:"memory"`
	GPUs          types.Int64           `tfsdk:"gpus"`
	Template      *podtemplate.Template `tfsdk:"template"`
}

type rayHead struct {
	rayPod
	RayStartParams types.Map    `tfsdk:"ray_start_params"`
	ServiceType    types.String `tfsdk:"service_type"`
}

type rayWorkerGroup struct {
	rayPod
	Name           types.String        `tfsdk:"name"`
	Replicas       types.Int64         `tfsdk:"replicas"`
	MinReplicas    types.Int64         `tfsdk:"min_replicas"`
	MaxReplicas    types.Int64         `tfsdk:"max_replicas"`
	NodeSelector   types.Map           `tfsdk:"node_selector"`
	Tolerations    []object.Toleration `tfsdk:"tolerations"`
	RayStartParams types.Map           `tfsdk:"ray_start_params"`
}

type rayAutoscaling struct {
	Enabled     types.Bool   `tfsdk:"enabled"`
	IdleTimeout types.String `tfsdk:"idle_timeout"`
}

// NewRayCluster is aiplatform_ray_cluster.
func NewRayCluster() resource.Resource {
	return withImportWarnings(object.New[rayClusterModel](object.Spec[rayClusterModel]{
		TypeName: "ray_cluster",
		Kind:     rayClusterKind,
		Description: "A KubeRay `ray.io/v1` RayCluster: a head and worker groups with GPUs, autoscaling bounds, an optional " +
			"Kueue queue (`queue_name` sets the `kueue.x-k8s.io/queue-name` label, so Kueue holds the cluster until its quota " +
			"admits it) and an optional model cache mounted read-only in every Ray pod.\n\n" +
			"The plan fails when a worker group asks for more GPUs per worker than any node matching its `node_selector` " +
			"has allocatable (read live), or when `replicas` is outside `min_replicas`…`max_replicas`. With `wait_for_ready` " +
			"(default) create and update wait until KubeRay reports the cluster `ready`, logging progress; a suspended or " +
			"queued cluster is not waited for. Only the fields written here are compared with the live object: what KubeRay " +
			"and Kueue add (default ports, admission's node selectors and tolerations) never shows as a diff.\n\n" +
			"`cpu`, `memory` and `gpus` fill the Ray container (the pod's first, named `container_name`); the head's and each group's " +
			"`template` says the rest of the pod with the shared pod-template model: volumes, ports, env from Secrets, sidecars, " +
			"requests that differ from limits, and a `pod_template` overlay for anything else. An import reads the container names " +
			"and everything the pods carry into these attributes, so `terraform plan -generate-config-out` reproduces the object, " +
			"and warns with their paths of RayCluster fields no attribute carries (a group's `numOfHosts`, the head Service, …): " +
			"a plan whose apply would change them shows them and is refused unless `accept_live_changes` lists them.",
		Attributes:   rayClusterAttributes(),
		Fields:       rayClusterFields,
		Read:         readRayCluster,
		Validate:     validateRayCluster,
		ModifyPlan:   planRayCluster,
		AfterApply:   waitRayCluster,
		ApplyTimeout: rayWaitTimeout,
		BeforeApply:  beforeApplyRayCluster,
	}))
}

// autoscalerReplicas keeps an existing worker group's unconfigured replicas
// as they are in state while autoscaling is on: after an import, which reads
// the autoscaler's current count, the default does not plan a change.
type autoscalerReplicas struct{}

func (autoscalerReplicas) Description(context.Context) string {
	return "With autoscaling on, an existing group's unconfigured replicas keep their value from state."
}

func (m autoscalerReplicas) MarkdownDescription(ctx context.Context) string {
	return m.Description(ctx)
}

func (autoscalerReplicas) PlanModifyInt64(ctx context.Context, req planmodifier.Int64Request, resp *planmodifier.Int64Response) {
	if !req.ConfigValue.IsNull() || req.State.Raw.IsNull() || req.StateValue.IsNull() || req.StateValue.IsUnknown() {
		// Configured (a plan must keep a configured value), a new cluster or
		// a new group: the configured count is the initial one.
		return
	}
	var enabled types.Bool
	if d := req.Plan.GetAttribute(ctx, tfpath.Root("autoscaling").AtName("enabled"), &enabled); d.HasError() || !enabled.ValueBool() {
		return
	}
	group := req.Path.ParentPath().AtName("name")
	var planned, prior types.String
	if req.Plan.GetAttribute(ctx, group, &planned).HasError() || req.State.GetAttribute(ctx, group, &prior).HasError() ||
		planned.IsUnknown() || planned.ValueString() != prior.ValueString() {
		return // not the same group at this index
	}
	resp.PlanValue = req.StateValue
}

func rayContainerNameAttr(def string) schema.StringAttribute {
	return schema.StringAttribute{Optional: true,
		MarkdownDescription: "Name of the Ray container (the first container of the pod, as KubeRay expects); `" + def + "` when unset. " +
			"An imported cluster's container keeps its name here, so an apply changes that container — never adds one of another name beside it.",
		Validators: []validator.String{validators.DNSLabel()}}
}

func rayTemplateAttr(whose string) schema.SingleNestedAttribute {
	return podtemplate.ManagedAttribute("The rest of the " + whose + " pod template: volumes, ports, env from Secrets, sidecars, requests " +
		"that differ from limits, service account, affinity, … (and `pod_template` for anything else a `PodTemplateSpec` can say). " +
		"The Ray container is the one named `container_name`: list it here (without an image: `image` or `ray_version` gives it) to add to it; " +
		"`cpu`, `memory` and `gpus` fill its resources and must not also be given here. An import puts here what the typed attributes cannot say.")
}

func rayMapAttr(desc string) schema.MapAttribute {
	return schema.MapAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: desc}
}

func rayQuantityAttr(desc string) schema.StringAttribute {
	return schema.StringAttribute{Optional: true, MarkdownDescription: desc, Validators: []validator.String{validators.Quantity()}}
}

func rayGPUsAttr(desc string) schema.Int64Attribute {
	return schema.Int64Attribute{Optional: true, MarkdownDescription: desc, Validators: []validator.Int64{int64validator.AtLeast(0)}}
}

func rayClusterAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"ray_version": schema.StringAttribute{Required: true,
			MarkdownDescription: "Ray version of the images (`spec.rayVersion`), e.g. `\"2.46.0\"`.",
			Validators:          []validator.String{stringvalidator.RegexMatches(rayVersionPattern, "must be a Ray version such as 2.46.0")}},
		"image": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Image of every Ray container whose `template` entry gives none. Default `rayproject/ray:<ray_version>`.",
			Validators:          []validator.String{stringvalidator.LengthAtLeast(1)}},
		"head": schema.SingleNestedAttribute{Required: true,
			MarkdownDescription: "The head pod.",
			Attributes: map[string]schema.Attribute{
				"container_name":   rayContainerNameAttr("ray-head"),
				"cpu":              rayQuantityAttr("CPU of the head's Ray container (requests and limits), e.g. `\"2\"`. For a request below the limit, leave it unset and give `template.containers[*].requests` and `limits` of the Ray container."),
				"memory":           rayQuantityAttr("Memory of the head's Ray container (requests and limits), e.g. `\"8Gi\"`."),
				"gpus":             rayGPUsAttr("GPUs (`nvidia.com/gpu`) of the head's Ray container (requests and limits). Usually unset: the head schedules, workers compute."),
				"template":         rayTemplateAttr("head's"),
				"ray_start_params": rayMapAttr("Arguments of the head's `ray start`, e.g. `{ dashboard-host = \"0.0.0.0\" }`."),
				"service_type": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("ClusterIP"),
					MarkdownDescription: "Type of the head Service: `ClusterIP` (default), `NodePort` or `LoadBalancer`.",
					Validators:          []validator.String{stringvalidator.OneOf("ClusterIP", "NodePort", "LoadBalancer")}},
			}},
		"worker_groups": schema.ListNestedAttribute{Optional: true,
			MarkdownDescription: "Worker groups, each a set of identical worker pods.",
			Validators:          []validator.List{listvalidator.SizeAtLeast(1)},
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the group (`groupName`), unique in the cluster.",
					Validators: []validator.String{validators.DNSLabel()}},
				"replicas": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(1),
					MarkdownDescription: "Workers in the group. Default `1`. With autoscaling this is the initial count of a new group: the autoscaler's changes are not shown as drift, and applies (also of a changed `replicas`) keep the count and workers to delete that the autoscaler set.",
					Validators:          []validator.Int64{int64validator.AtLeast(0)},
					PlanModifiers:       []planmodifier.Int64{autoscalerReplicas{}}},
				"min_replicas": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(0),
					MarkdownDescription: "Fewest workers the autoscaler keeps. Default `0`.",
					Validators:          []validator.Int64{int64validator.AtLeast(0)}},
				"max_replicas": schema.Int64Attribute{Optional: true,
					MarkdownDescription: "Most workers the autoscaler creates. Unset: no bound (KubeRay's default).",
					Validators:          []validator.Int64{int64validator.Between(0, kuberayMaxReplicas)}},
				"container_name": rayContainerNameAttr("ray-worker"),
				"cpu":            rayQuantityAttr("CPU of each worker's Ray container (requests and limits). For a request below the limit, leave it unset and give them in `template`."),
				"memory":         rayQuantityAttr("Memory of each worker's Ray container (requests and limits)."),
				"gpus": rayGPUsAttr("GPUs (`nvidia.com/gpu`) of each worker's Ray container (requests and limits). Must not be more than the allocatable GPUs of a node " +
					"matching `node_selector` (checked against the live nodes at plan time; GPUs given in `template` are checked too)."),
				"template": rayTemplateAttr("workers'"),
				"node_selector": schema.MapAttribute{ElementType: types.StringType, Optional: true,
					MarkdownDescription: "Node labels the workers must run on, e.g. a GPU pool's `{ \"nvidia.com/gpu.product\" = \"NVIDIA-H100-80GB-HBM3\" }`.",
					Validators:          []validator.Map{validators.Labels()}},
				"tolerations":      object.TolerationsAttribute("Tolerations of the workers, e.g. for a tainted GPU pool."),
				"ray_start_params": rayMapAttr("Arguments of the workers' `ray start`."),
			}}},
		"autoscaling": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "KubeRay's in-tree autoscaler: scales each worker group between its `min_replicas` and `max_replicas`.",
			Attributes: map[string]schema.Attribute{
				"enabled": schema.BoolAttribute{Required: true, MarkdownDescription: "Run the autoscaler (`enableInTreeAutoscaling`)."},
				"idle_timeout": schema.StringAttribute{Optional: true,
					MarkdownDescription: "How long a worker is idle before it is removed, as a duration in whole raySeconds (`\"60s\"`, `\"5m\"`); unset: Ray's default (60 s)."},
			}},
		"queue_name": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Kueue LocalQueue of the cluster: sets the `kueue.x-k8s.io/queue-name` label on the RayCluster and its pods. " +
				"With Kueue's `ray.io/raycluster` integration, Kueue keeps the cluster suspended until its quota admits all of it. Then " +
				"`suspend` belongs to Kueue and is not compared, and create does not wait for readiness.",
			Validators: []validator.String{validators.LabelValue(), stringvalidator.LengthAtLeast(1)}},
		"suspend": schema.BoolAttribute{Optional: true,
			MarkdownDescription: "Suspend the cluster: KubeRay deletes its pods and keeps the object. Unset: not suspended (or, with `queue_name`, as Kueue decides)."},
		"model_cache": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "A warmed `aiplatform_model_cache` mounted read-only at `mount_path` in the head and every worker. Pass its attributes: " +
				"`{ mode = c.mode, claim_name = c.claim_name, host_path = c.host_path, sub_path = c.sub_path, mount_path = c.mount_path }`.",
			Attributes: map[string]schema.Attribute{
				"mode": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(modelcache.ModePVC),
					MarkdownDescription: "`pvc` (default: the claim, with the revision as subPath) or `node_local` (the node's copy under `host_path`).",
					Validators:          []validator.String{stringvalidator.OneOf(modelcache.ModePVC, modelcache.ModeNodeLocal)}},
				"claim_name": schema.StringAttribute{Optional: true, MarkdownDescription: "The cache's PersistentVolumeClaim (mode `pvc`)."},
				"host_path":  schema.StringAttribute{Optional: true, MarkdownDescription: "The cache's directory on each node (mode `node_local`)."},
				"sub_path":   schema.StringAttribute{Required: true, MarkdownDescription: "The warmed revision's directory in the cache."},
				"mount_path": schema.StringAttribute{Required: true, MarkdownDescription: "Where the weights appear in the Ray containers."},
			}},
		"wait_for_ready": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
			MarkdownDescription: "Wait after create and update until KubeRay reports `status.state = ready` (`timeouts.create` / `timeouts.update`, default 10 minutes), logging progress at INFO. " +
				"Default `true`. Never waits for a suspended cluster or one with `queue_name`."},
		"head_service_name": schema.StringAttribute{Computed: true,
			MarkdownDescription: "The head Service KubeRay creates (`<name>-head-svc`)."},
		"dashboard_address": schema.StringAttribute{Computed: true,
			MarkdownDescription: "The Ray dashboard inside the cluster, `<service>.<namespace>.svc:<port>`; also where Ray jobs are submitted."},
		"client_address": schema.StringAttribute{Computed: true,
			MarkdownDescription: "The Ray client address inside the cluster, `ray://<service>.<namespace>.svc:<port>`."},
		"ready_workers": schema.Int64Attribute{Computed: true,
			MarkdownDescription: "Worker pods ready, as KubeRay last reported (`status.readyWorkerReplicas`)."},
	}
}
