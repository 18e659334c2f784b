package serving

import (
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// rayServiceKind is KubeRay's RayService: Ray Serve applications on a
// RayCluster that KubeRay creates (and replaces on upgrade) from
// spec.rayClusterConfig.
var rayServiceKind = catalog.RayServiceKind

const (
	// KubeRay v1.5's upgrade strategies (spec.upgradeStrategy.type).
	rayUpgradeNewCluster  = "NewCluster"
	rayUpgradeNone        = "None"
	rayUpgradeIncremental = "NewClusterWithIncrementalUpgrade"
	// rayInitializingTimeoutAnnotation bounds how long KubeRay lets a new
	// cluster initialize before it gives up on it (v1.5).
	rayInitializingTimeoutAnnotation = "ray.io/initializing-timeout"
	// rayServiceMaxName is KubeRay's limit (MaxRayServiceNameLength): its
	// clusters are named <service>-<5 random characters>.
	rayServiceMaxName = 47
	// kuberayMaxSurgeDefault is the CRD's default of maxSurgePercent.
	kuberayMaxSurgeDefault = 100
)

type rayServiceModel struct {
	object.NamespacedMeta
	object.LiveChanges
	rayClusterSpec
	ServeConfig          types.String        `tfsdk:"serve_config"`
	UpgradeStrategy      *rayUpgradeStrategy `tfsdk:"upgrade_strategy"`
	ClusterDeletionDelay types.Int64         `tfsdk:"cluster_deletion_delay_seconds"`
	InitializingTimeout  types.String        `tfsdk:"initializing_timeout"`
	ExcludeHeadFromServe types.Bool          `tfsdk:"exclude_head_from_serve_service"`
	WaitForReady         types.Bool          `tfsdk:"wait_for_ready"`
	ServeServiceName     types.String        `tfsdk:"serve_service_name"`
	HeadServiceName      types.String        `tfsdk:"head_service_name"`
	DashboardAddress     types.String        `tfsdk:"dashboard_address"`
	ActiveClusterName    types.String        `tfsdk:"active_cluster_name"`
	PendingClusterName   types.String        `tfsdk:"pending_cluster_name"`
	ApplicationNames     types.List          `tfsdk:"application_names"`
}

type rayUpgradeStrategy struct {
	Type             types.String `tfsdk:"type"`
	MaxSurgePercent  types.Int64  `tfsdk:"max_surge_percent"`
	StepSizePercent  types.Int64  `tfsdk:"step_size_percent"`
	IntervalSeconds  types.Int64  `tfsdk:"interval_seconds"`
	GatewayClassName types.String `tfsdk:"gateway_class_name"`
}

// NewRayService is aiplatform_ray_service.
func NewRayService() resource.Resource {
	return withImportWarningsOf(object.New[rayServiceModel](object.Spec[rayServiceModel]{
		TypeName: "ray_service",
		Kind:     rayServiceKind,
		Description: "A KubeRay `ray.io/v1` RayService: Ray Serve applications (`serve_config`, Ray's `serveConfigV2` YAML) on a " +
			"RayCluster that KubeRay creates from the same head, worker groups, autoscaling and model cache as `aiplatform_ray_cluster` " +
			"(`spec.rayClusterConfig`), and replaces on upgrade as `upgrade_strategy` says.\n\n" +
			"The plan fails when `serve_config` is not YAML of Serve applications (a mapping with an `applications` list, each with an " +
			"`import_path`, names unique), when a worker group asks for more GPUs per worker than any node matching its `node_selector` " +
			"has allocatable (read live), or when `replicas` is outside `min_replicas`…`max_replicas`.\n\n" +
			"**Ready** means what the provider can observe from the Kubernetes API: with `wait_for_ready` (default) create and update " +
			"wait until KubeRay has created the RayCluster it serves from (the pending " +
			"one while the first or an upgraded cluster starts, else the active one) and that cluster reports `ready` — its head and " +
			"all workers running. Whether the Serve applications deployed and are healthy is reported by the Ray dashboard " +
			"(`applicationStatuses` in the RayService's status, and its `Ready` condition), which is not waited for: a cluster whose " +
			"applications fail to import still counts as ready here. Watch `kubectl get rayservice` or the dashboard for that.\n\n" +
			"Only the fields written here are compared with the live object. An import reads everything the pods carry into the " +
			"attributes and warns with their paths of RayService fields no attribute carries (a custom `serveService`, a group's " +
			"`numOfHosts`, …). KubeRay v1.5's `serviceUnhealthySecondThreshold` and `deploymentUnhealthySecondThreshold` are deprecated " +
			"and unused by the operator, so they have no attribute.",
		Attributes:   rayServiceAttributes(),
		Fields:       rayServiceFields,
		Read:         readRayService,
		Validate:     validateRayService,
		ModifyPlan:   planRayService,
		AfterApply:   waitRayService,
		ApplyTimeout: rayWaitTimeout,
		BeforeApply:  beforeApplyRayService,
	}), rayServiceKind, "aiplatform_ray_service", rayServiceUnexpressed)
}

func rayServiceAttributes() map[string]schema.Attribute {
	attrs := rayClusterSpecAttributes()
	attrs["serve_config"] = schema.StringAttribute{Required: true,
		MarkdownDescription: "The Serve applications, as Ray Serve's config file YAML (`serveConfigV2`), e.g. " +
			"`yamlencode({ applications = [{ name = \"llm\", import_path = \"serve_app:app\", route_prefix = \"/\" }] })`. " +
			"Checked at plan time: it must parse, and be a mapping whose `applications` is a list of mappings, each with an " +
			"`import_path`; `name`s must be unique (and given when there are several). KubeRay submits it to the cluster's " +
			"dashboard; changing it does not replace the cluster.",
		Validators: []validator.String{stringvalidator.LengthAtLeast(1)}}
	attrs["upgrade_strategy"] = schema.SingleNestedAttribute{Optional: true,
		MarkdownDescription: "What KubeRay does when `rayClusterConfig` changes (KubeRay v1.5). Unset: KubeRay's default, `NewCluster`.",
		Attributes: map[string]schema.Attribute{
			"type": schema.StringAttribute{Required: true,
				MarkdownDescription: "`NewCluster`: start an upgraded cluster and switch traffic to it once its applications are healthy (zero downtime, twice the resources meanwhile). " +
					"`None`: never create a new cluster; changes to the cluster config are not rolled out (only `serve_config` and worker replicas are updated in place). " +
					"`NewClusterWithIncrementalUpgrade`: scale the new cluster up and move traffic step by step through the Gateway API; needs `autoscaling`, " +
					"`step_size_percent`, `interval_seconds`, `gateway_class_name`, and KubeRay's `RayServiceIncrementalUpgrade` feature gate.",
				Validators: []validator.String{stringvalidator.OneOf(rayUpgradeNewCluster, rayUpgradeNone, rayUpgradeIncremental)}},
			"max_surge_percent": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "Incremental upgrade: how much of the serving capacity the new cluster scales up by each interval, in percent. Unset: KubeRay's default, 100.",
				Validators:          []validator.Int64{int64validator.Between(0, 100)}},
			"step_size_percent": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "Incremental upgrade: the percentage of traffic moved to the new cluster each interval.",
				Validators:          []validator.Int64{int64validator.Between(0, 100)}},
			"interval_seconds": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "Incremental upgrade: seconds between two traffic steps.",
				Validators:          []validator.Int64{int64validator.AtLeast(1)}},
			"gateway_class_name": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Incremental upgrade: the GatewayClass KubeRay's Gateway and HTTPRoute use.",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)}},
		}}
	attrs["cluster_deletion_delay_seconds"] = schema.Int64Attribute{Optional: true,
		MarkdownDescription: "Seconds KubeRay waits after switching to an upgraded cluster before deleting the old one (`rayClusterDeletionDelaySeconds`). Unset: KubeRay's default, 60.",
		Validators:          []validator.Int64{int64validator.Between(0, 2147483647)}}
	attrs["initializing_timeout"] = schema.StringAttribute{Optional: true,
		MarkdownDescription: "How long a new cluster may take to become ready and serve before KubeRay gives up on it, as a duration (`\"30m\"`, `\"1h\"`); " +
			"the `ray.io/initializing-timeout` annotation. Unset: no limit.",
		Validators: []validator.String{stringvalidator.LengthAtLeast(1)}}
	attrs["exclude_head_from_serve_service"] = schema.BoolAttribute{Optional: true,
		MarkdownDescription: "Keep the head pod out of the Serve Service's endpoints (`excludeHeadPodFromServeSvc`), so requests go to workers only. Unset: false."}
	attrs["wait_for_ready"] = schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
		MarkdownDescription: "Wait after create and update (`timeouts.create` / `timeouts.update`, default 10 minutes) until KubeRay has created the RayCluster it serves from and that cluster " +
			"is `ready` (its head and workers running), logging progress at INFO. The Serve applications' health is not waited for (see above). Default `true`."}
	attrs["serve_service_name"] = schema.StringAttribute{Computed: true,
		MarkdownDescription: "The Service that routes Serve traffic to the active cluster (`<name>-serve-svc`, port 8000); KubeRay creates it once the applications are healthy."}
	attrs["head_service_name"] = schema.StringAttribute{Computed: true,
		MarkdownDescription: "The head Service of the active cluster that KubeRay keeps under a stable name (`<name>-head-svc`)."}
	attrs["dashboard_address"] = schema.StringAttribute{Computed: true,
		MarkdownDescription: "The Ray dashboard of the active cluster inside the cluster, `<head service>.<namespace>.svc:<port>`."}
	attrs["active_cluster_name"] = schema.StringAttribute{Computed: true,
		MarkdownDescription: "The RayCluster serving traffic (`status.activeServiceStatus.rayClusterName`); empty until a cluster's applications first became healthy."}
	attrs["pending_cluster_name"] = schema.StringAttribute{Computed: true,
		MarkdownDescription: "The RayCluster being prepared (`status.pendingServiceStatus.rayClusterName`): the first cluster until its applications are healthy, or an upgrade's; empty otherwise."}
	attrs["application_names"] = schema.ListAttribute{Computed: true, ElementType: types.StringType,
		MarkdownDescription: "The names of the Serve applications in `serve_config`, in order (Ray's default `default` for one without a name)."}
	return attrs
}
