package serving

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	tfpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/modelcache"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// rayClusterKind is KubeRay's RayCluster.
var rayClusterKind = kube.Kind{
	Group: "ray.io", Version: "v1", Resource: "rayclusters", Kind: "RayCluster", Namespaced: true,
	Missing: "the KubeRay CRDs are not installed in this cluster: add aiplatform_kuberay_operator or install KubeRay",
}

// rayQueueLabel is the label Kueue reads a workload's LocalQueue from.
const rayQueueLabel = "kueue.x-k8s.io/queue-name"

const (
	// KubeRay's defaults: worker groups without maxReplicas get MaxInt32, the
	// head service is <cluster>-head-svc, and Ray's ports.
	kuberayMaxReplicas = 2147483647
	rayDashboardPort   = "8265"
	rayClientPort      = "10001"
	rayReadyState      = "ready"
	// rayWaitTimeout bounds wait_for_ready.
	rayWaitTimeout = 10 * time.Minute
	// rayDefaultImage is the image for ray_version when image is not set.
	rayDefaultImage = "rayproject/ray:"
)

var rayVersionPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+)?([-+.][0-9A-Za-z.+-]+)?$`)

type rayClusterModel struct {
	object.NamespacedMeta
	RayVersion   types.String     `tfsdk:"ray_version"`
	Image        types.String     `tfsdk:"image"`
	Head         *rayHead         `tfsdk:"head"`
	WorkerGroups []rayWorkerGroup `tfsdk:"worker_groups"`
	Autoscaling  *rayAutoscaling  `tfsdk:"autoscaling"`
	QueueName    types.String     `tfsdk:"queue_name"`
	Suspend      types.Bool       `tfsdk:"suspend"`
	ModelCache   *rayModelCache   `tfsdk:"model_cache"`
	WaitForReady types.Bool       `tfsdk:"wait_for_ready"`

	HeadServiceName  types.String `tfsdk:"head_service_name"`
	DashboardAddress types.String `tfsdk:"dashboard_address"`
	ClientAddress    types.String `tfsdk:"client_address"`
	ReadyWorkers     types.Int64  `tfsdk:"ready_workers"`
}

type rayHead struct {
	CPU            types.String `tfsdk:"cpu"`
	Memory         types.String `tfsdk:"memory"`
	GPUs           types.Int64  `tfsdk:"gpus"`
	RayStartParams types.Map    `tfsdk:"ray_start_params"`
	ServiceType    types.String `tfsdk:"service_type"`
}

type rayWorkerGroup struct {
	Name           types.String        `tfsdk:"name"`
	Replicas       types.Int64         `tfsdk:"replicas"`
	MinReplicas    types.Int64         `tfsdk:"min_replicas"`
	MaxReplicas    types.Int64         `tfsdk:"max_replicas"`
	CPU            types.String        `tfsdk:"cpu"`
	Memory         types.String        `tfsdk:"memory"`
	GPUs           types.Int64         `tfsdk:"gpus"`
	NodeSelector   types.Map           `tfsdk:"node_selector"`
	Tolerations    []object.Toleration `tfsdk:"tolerations"`
	RayStartParams types.Map           `tfsdk:"ray_start_params"`
}

type rayAutoscaling struct {
	Enabled     types.Bool   `tfsdk:"enabled"`
	IdleTimeout types.String `tfsdk:"idle_timeout"`
}

type rayModelCache struct {
	Mode      types.String `tfsdk:"mode"`
	ClaimName types.String `tfsdk:"claim_name"`
	HostPath  types.String `tfsdk:"host_path"`
	SubPath   types.String `tfsdk:"sub_path"`
	MountPath types.String `tfsdk:"mount_path"`
}

// NewRayCluster is aiplatform_ray_cluster.
func NewRayCluster() resource.Resource {
	return object.New[rayClusterModel](object.Spec[rayClusterModel]{
		TypeName: "ray_cluster",
		Kind:     rayClusterKind,
		Description: "A KubeRay `ray.io/v1` RayCluster: a head and worker groups with GPUs, autoscaling bounds, an optional " +
			"Kueue queue (`queue_name` sets the `kueue.x-k8s.io/queue-name` label, so Kueue holds the cluster until its quota " +
			"admits it) and an optional model cache mounted read-only in every Ray pod.\n\n" +
			"The plan fails when a worker group asks for more GPUs per worker than any node matching its `node_selector` " +
			"has allocatable (read live), or when `replicas` is outside `min_replicas`…`max_replicas`. With `wait_for_ready` " +
			"(default) create and update wait until KubeRay reports the cluster `ready`, logging progress; a suspended or " +
			"queued cluster is not waited for. Only the fields written here are compared with the live object: what KubeRay " +
			"and Kueue add (default ports, admission's node selectors and tolerations) never shows as a diff.",
		Attributes:  rayClusterAttributes(),
		Fields:      rayClusterFields,
		Read:        readRayCluster,
		Validate:    validateRayCluster,
		ModifyPlan:  planRayCluster,
		AfterApply:  waitRayCluster,
		BeforeApply: keepAutoscalerReplicas,
	})
}

// keepAutoscalerReplicas: with autoscaling on, KubeRay's autoscaler scales
// each worker group by updating its replicas (and scaleStrategy, the workers
// it removes). workerGroupSpecs is an atomic list in KubeRay's CRD, so that
// update makes the autoscaler own the whole list: the next apply would
// either conflict on it or, forced, put the configured count back. So the
// live replicas and scaleStrategy of every existing group are written back
// unchanged, and the apply takes the list back by force — the autoscaler
// never applies, so it loses nothing and keeps scaling. Configured replicas
// are only the initial count of a new group.
func keepAutoscalerReplicas(_ context.Context, m *rayClusterModel, fields map[string]any, read func() (map[string]any, error)) (bool, error) {
	if m.Autoscaling == nil || !m.Autoscaling.Enabled.ValueBool() {
		return false, nil // nothing to keep: no read
	}
	live, err := read()
	if err != nil || live == nil {
		return false, err
	}
	current := map[string]map[string]any{}
	for _, g := range object.Items(live, "spec", "workerGroupSpecs") {
		if name, ok := g["groupName"].(string); ok {
			current[name] = g
		}
	}
	spec, _ := fields["spec"].(map[string]any)
	groups, _ := spec["workerGroupSpecs"].([]any)
	for _, g := range groups {
		wg, ok := g.(map[string]any)
		if !ok {
			continue
		}
		name, _ := wg["groupName"].(string)
		if l, ok := current[name]; ok {
			for _, k := range []string{"replicas", "scaleStrategy"} {
				if v, ok := l[k]; ok {
					wg[k] = v
				}
			}
		}
	}
	return true, nil
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
			MarkdownDescription: "Container image of every Ray pod. Default `rayproject/ray:<ray_version>`.",
			Validators:          []validator.String{stringvalidator.LengthAtLeast(1)}},
		"head": schema.SingleNestedAttribute{Required: true,
			MarkdownDescription: "The head pod.",
			Attributes: map[string]schema.Attribute{
				"cpu":              rayQuantityAttr("CPU of the head container (requests and limits), e.g. `\"2\"`."),
				"memory":           rayQuantityAttr("Memory of the head container (requests and limits), e.g. `\"8Gi\"`."),
				"gpus":             rayGPUsAttr("GPUs (`nvidia.com/gpu`) of the head container. Usually unset: the head schedules, workers compute."),
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
				"cpu":    rayQuantityAttr("CPU of each worker container (requests and limits)."),
				"memory": rayQuantityAttr("Memory of each worker container (requests and limits)."),
				"gpus": rayGPUsAttr("GPUs (`nvidia.com/gpu`) of each worker. Must not be more than the allocatable GPUs of a node " +
					"matching `node_selector` (checked against the live nodes at plan time)."),
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
			MarkdownDescription: "Wait after create and update until KubeRay reports `status.state = ready` (at most 10 minutes), logging progress. " +
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

// ---- model → object -------------------------------------------------------

func rayImageOf(m *rayClusterModel) string {
	if object.Known(m.Image) {
		return m.Image.ValueString()
	}
	return rayDefaultImage + m.RayVersion.ValueString()
}

func rayResourcesOut(cpu, memory types.String, gpus types.Int64) map[string]any {
	limits := map[string]any{}
	object.Put(limits, "cpu", cpu)
	object.Put(limits, "memory", memory)
	if object.Known(gpus) && gpus.ValueInt64() > 0 {
		limits[capacity.DefaultGPUResource] = strconv.FormatInt(gpus.ValueInt64(), 10)
	}
	if len(limits) == 0 {
		return nil
	}
	requests := map[string]any{}
	for k, v := range limits {
		requests[k] = v
	}
	return map[string]any{"limits": limits, "requests": requests}
}

// rayPodTemplate is a Ray pod's template: one container, the cache's volume,
// and the queue label.
func rayPodTemplate(m *rayClusterModel, container string, res map[string]any, extra map[string]any) map[string]any {
	c := map[string]any{"name": container, "image": rayImageOf(m)}
	object.Put(c, "resources", res)
	spec := map[string]any{"containers": []any{c}}
	if mc := m.ModelCache; mc != nil {
		if vol, mount, err := rayCacheOf(mc).Mount(modelcache.DefaultVolumeName); err == nil {
			mountMap := map[string]any{"name": mount.Name, "mountPath": mount.MountPath, "readOnly": true}
			object.Put(mountMap, "subPath", mount.SubPath)
			c["volumeMounts"] = []any{mountMap}
			v := map[string]any{"name": vol.Name}
			if pvc := vol.PersistentVolumeClaim; pvc != nil {
				v["persistentVolumeClaim"] = map[string]any{"claimName": pvc.ClaimName, "readOnly": true}
			}
			if hp := vol.HostPath; hp != nil {
				v["hostPath"] = map[string]any{"path": hp.Path, "type": string(*hp.Type)}
			}
			spec["volumes"] = []any{v}
		}
	}
	for k, v := range extra {
		object.Put(spec, k, v)
	}
	tmpl := map[string]any{"spec": spec}
	if object.Known(m.QueueName) {
		tmpl["metadata"] = map[string]any{"labels": map[string]any{rayQueueLabel: m.QueueName.ValueString()}}
	}
	return tmpl
}

func rayCacheOf(mc *rayModelCache) modelcache.Cache {
	return modelcache.Cache{Mode: mc.Mode.ValueString(), ClaimName: mc.ClaimName.ValueString(), HostPath: mc.HostPath.ValueString(),
		SubPath: mc.SubPath.ValueString(), MountPath: mc.MountPath.ValueString()}
}

func rayStartParamsOut(m types.Map) map[string]any {
	if p := object.MapOut(m); p != nil {
		return p
	}
	return map[string]any{} // required by the CRD
}

func rayClusterFields(m *rayClusterModel) map[string]any {
	spec := map[string]any{"rayVersion": m.RayVersion.ValueString()}
	h := m.Head
	if h == nil {
		h = &rayHead{}
	}
	head := map[string]any{
		"rayStartParams": rayStartParamsOut(h.RayStartParams),
		"template":       rayPodTemplate(m, "ray-head", rayResourcesOut(h.CPU, h.Memory, h.GPUs), nil),
	}
	object.Put(head, "serviceType", h.ServiceType)
	spec["headGroupSpec"] = head
	if len(m.WorkerGroups) > 0 {
		groups := make([]any, len(m.WorkerGroups))
		for i, g := range m.WorkerGroups {
			wg := map[string]any{
				"groupName":      g.Name.ValueString(),
				"rayStartParams": rayStartParamsOut(g.RayStartParams),
				"template": rayPodTemplate(m, "ray-worker", rayResourcesOut(g.CPU, g.Memory, g.GPUs), map[string]any{
					"nodeSelector": object.MapOut(g.NodeSelector),
					"tolerations":  object.TolerationsToObject(g.Tolerations),
				}),
			}
			object.Put(wg, "replicas", g.Replicas)
			object.Put(wg, "minReplicas", g.MinReplicas)
			object.Put(wg, "maxReplicas", g.MaxReplicas)
			groups[i] = wg
		}
		spec["workerGroupSpecs"] = groups
	}
	if a := m.Autoscaling; a != nil {
		object.Put(spec, "enableInTreeAutoscaling", a.Enabled)
		if d, err := raySeconds(a.IdleTimeout); err == nil && d >= 0 {
			spec["autoscalerOptions"] = map[string]any{"idleTimeoutSeconds": d}
		}
	}
	object.Put(spec, "suspend", m.Suspend)
	fields := map[string]any{"spec": spec}
	if object.Known(m.QueueName) {
		fields["metadata"] = map[string]any{"labels": map[string]any{rayQueueLabel: m.QueueName.ValueString()}}
	}
	return fields
}

// raySeconds parses a duration in whole seconds; -1 and no error when unset.
func raySeconds(s types.String) (int64, error) {
	if !object.Known(s) {
		return -1, nil
	}
	d, err := time.ParseDuration(s.ValueString())
	if err != nil {
		return 0, err
	}
	if d < 0 || d%time.Second != 0 {
		return 0, fmt.Errorf("%q is not a whole, non-negative number of seconds", s.ValueString())
	}
	return int64(d / time.Second), nil
}

// rayDuration spells whole seconds as people write them: "5m", "1h", "90s".
func rayDuration(secs int64) string {
	switch {
	case secs != 0 && secs%3600 == 0:
		return fmt.Sprintf("%dh", secs/3600)
	case secs != 0 && secs%60 == 0:
		return fmt.Sprintf("%dm", secs/60)
	}
	return fmt.Sprintf("%ds", secs)
}

// ---- object → model -------------------------------------------------------

func readRayCluster(live map[string]any, m *rayClusterModel) {
	spec := object.Fields(live, "spec")
	m.RayVersion = object.String(spec["rayVersion"], m.RayVersion)
	head := object.Fields(spec, "headGroupSpec")
	headC := rayFirstContainer(object.Fields(head, "template"))
	image, _ := headC["image"].(string)
	if m.Image.IsNull() && image == rayDefaultImage+m.RayVersion.ValueString() {
		// the default, not written by the user
	} else {
		m.Image = object.String(image, m.Image)
	}

	var prior rayHead
	if m.Head != nil {
		prior = *m.Head
	}
	h := &rayHead{RayStartParams: object.StringMap(head["rayStartParams"], prior.RayStartParams)}
	h.CPU, h.Memory, h.GPUs = rayResourcesIn(headC, prior.CPU, prior.Memory, prior.GPUs)
	h.ServiceType = object.String(head["serviceType"], prior.ServiceType)
	if h.ServiceType.IsNull() {
		h.ServiceType = types.StringValue("ClusterIP") // KubeRay's default
	}
	m.Head = h

	autoscaling := false
	var groups []rayWorkerGroup
	for i, wg := range object.Items(spec, "workerGroupSpecs") {
		var p rayWorkerGroup
		if i < len(m.WorkerGroups) {
			p = m.WorkerGroups[i]
		}
		g := rayWorkerGroup{
			Name:           object.String(wg["groupName"], p.Name),
			Replicas:       object.Int64(wg["replicas"]),
			MinReplicas:    object.Int64(wg["minReplicas"]),
			MaxReplicas:    object.Int64(wg["maxReplicas"]),
			RayStartParams: object.StringMap(wg["rayStartParams"], p.RayStartParams),
		}
		if g.MinReplicas.IsNull() {
			g.MinReplicas = types.Int64Value(0)
		}
		if g.Replicas.IsNull() {
			g.Replicas = types.Int64Value(1)
		}
		if p.MaxReplicas.IsNull() && g.MaxReplicas.ValueInt64() == kuberayMaxReplicas {
			g.MaxReplicas = types.Int64Null() // KubeRay's default, not written
		}
		tmpl := object.Fields(wg, "template")
		c := rayFirstContainer(tmpl)
		g.CPU, g.Memory, g.GPUs = rayResourcesIn(c, p.CPU, p.Memory, p.GPUs)
		g.NodeSelector = rayOwnedSelector(object.Fields(tmpl, "spec", "nodeSelector"), p.NodeSelector)
		g.Tolerations = rayOwnedTolerations(object.List(tmpl, "spec", "tolerations"), p.Tolerations)
		groups = append(groups, g)
	}
	if m.Autoscaling != nil || spec["enableInTreeAutoscaling"] != nil {
		a := &rayAutoscaling{Enabled: types.BoolValue(spec["enableInTreeAutoscaling"] == true), IdleTimeout: types.StringNull()}
		var prior types.String
		if m.Autoscaling != nil {
			prior = m.Autoscaling.IdleTimeout
		}
		if s := object.Int64(object.Field(spec, "autoscalerOptions", "idleTimeoutSeconds")); !s.IsNull() {
			a.IdleTimeout = types.StringValue(rayDuration(s.ValueInt64()))
			if p, err := raySeconds(prior); err == nil && p == s.ValueInt64() {
				a.IdleTimeout = prior // the user's spelling
			}
		}
		m.Autoscaling = a
		autoscaling = a.Enabled.ValueBool()
	}
	if autoscaling {
		// The autoscaler owns replicas once running: keep what was configured.
		for i := range groups {
			if i < len(m.WorkerGroups) && object.Known(m.WorkerGroups[i].Replicas) {
				groups[i].Replicas = m.WorkerGroups[i].Replicas
			}
		}
	}
	m.WorkerGroups = groups

	labels := object.Fields(live, "metadata", "labels")
	m.QueueName = object.String(labels[rayQueueLabel], m.QueueName)
	if m.QueueName.IsNull() {
		// Without a queue the suspension is the user's; with one it is Kueue's.
		suspended := spec["suspend"] == true
		if suspended || !m.Suspend.IsNull() {
			m.Suspend = types.BoolValue(suspended)
		}
	}
	m.ModelCache = rayReadCache(object.Fields(head, "template"), headC, m.ModelCache)
	if m.WaitForReady.IsNull() {
		m.WaitForReady = types.BoolValue(true) // import: the default
	}

	name, _ := object.Field(live, "metadata", "name").(string)
	ns, _ := object.Field(live, "metadata", "namespace").(string)
	raySetAddresses(m, name, ns)
	if svc, _ := object.Field(live, "status", "head", "serviceName").(string); svc != "" {
		m.HeadServiceName = types.StringValue(svc)
	}
	m.ReadyWorkers = object.Int64(object.Field(live, "status", "readyWorkerReplicas"))
	if m.ReadyWorkers.IsNull() {
		m.ReadyWorkers = types.Int64Value(0)
	}
}

// raySetAddresses computes the head service's name and addresses the way
// KubeRay names them, with the ports the head's ray_start_params choose.
func raySetAddresses(m *rayClusterModel, name, namespace string) {
	svc := name + "-head-svc"
	dashboard, client := rayDashboardPort, rayClientPort
	if m.Head != nil {
		params := object.Labels(m.Head.RayStartParams)
		if p := params["dashboard-port"]; p != "" {
			dashboard = p
		}
		if p := params["ray-client-server-port"]; p != "" {
			client = p
		}
	}
	host := svc + "." + namespace + ".svc"
	m.HeadServiceName = types.StringValue(svc)
	m.DashboardAddress = types.StringValue(host + ":" + dashboard)
	m.ClientAddress = types.StringValue("ray://" + host + ":" + client)
}

func rayFirstContainer(tmpl map[string]any) map[string]any {
	cs := object.Items(tmpl, "spec", "containers")
	if len(cs) == 0 {
		return nil
	}
	return cs[0]
}

func rayResourcesIn(c map[string]any, cpu, memory types.String, gpus types.Int64) (types.String, types.String, types.Int64) {
	limits := object.Fields(c, "resources", "limits")
	g := types.Int64Null()
	if q, ok := limits[capacity.DefaultGPUResource]; ok {
		if n, err := strconv.ParseInt(fmt.Sprint(q), 10, 64); err == nil {
			g = types.Int64Value(n)
		}
	}
	if g.IsNull() && object.Known(gpus) && gpus.ValueInt64() == 0 {
		g = gpus // 0 written as no GPU
	}
	return object.Quantity(limits["cpu"], cpu), object.Quantity(limits["memory"], memory), g
}

// rayOwnedSelector reads a node selector. With a prior value only its keys are
// compared: Kueue adds its flavor's node labels on admission.
func rayOwnedSelector(live map[string]any, prior types.Map) types.Map {
	if object.Known(prior) {
		owned := map[string]any{}
		for k := range prior.Elements() {
			if v, ok := live[k]; ok {
				owned[k] = v
			}
		}
		live = owned
	}
	return object.StringMap(live, prior)
}

// rayOwnedTolerations reads tolerations. With a prior value only tolerations
// equal to one of it are kept: Kueue appends its flavor's on admission.
func rayOwnedTolerations(live []any, prior []object.Toleration) []object.Toleration {
	var out []object.Toleration
	for _, t := range object.TolerationsFromObject(live) {
		if prior != nil && !slices.ContainsFunc(prior, t.Equal) {
			continue
		}
		out = append(out, t)
	}
	if out == nil {
		return object.EmptyOrNil(prior)
	}
	return out
}

func rayReadCache(tmpl, c map[string]any, prior *rayModelCache) *rayModelCache {
	var mount map[string]any
	for _, vm := range object.Items(c, "volumeMounts") {
		if vm["name"] == modelcache.DefaultVolumeName {
			mount = vm
		}
	}
	var vol map[string]any
	for _, v := range object.Items(tmpl, "spec", "volumes") {
		if v["name"] == modelcache.DefaultVolumeName {
			vol = v
		}
	}
	if mount == nil || vol == nil {
		return nil
	}
	var p rayModelCache
	if prior != nil {
		p = *prior
	}
	out := &rayModelCache{MountPath: object.String(mount["mountPath"], p.MountPath), ClaimName: types.StringNull(), HostPath: types.StringNull()}
	if claim, _ := object.Field(vol, "persistentVolumeClaim", "claimName").(string); claim != "" {
		out.Mode = types.StringValue(modelcache.ModePVC)
		out.ClaimName = types.StringValue(claim)
		out.SubPath = object.String(mount["subPath"], p.SubPath)
		if !p.HostPath.IsNull() {
			out.HostPath = p.HostPath // not written in this mode
		}
		return out
	}
	if hp, _ := object.Field(vol, "hostPath", "path").(string); hp != "" {
		out.Mode = types.StringValue(modelcache.ModeNodeLocal)
		out.HostPath, out.SubPath = types.StringValue(path.Dir(hp)), types.StringValue(path.Base(hp))
		if object.Known(p.HostPath) && object.Known(p.SubPath) && path.Join(p.HostPath.ValueString(), p.SubPath.ValueString()) == hp {
			out.HostPath, out.SubPath = p.HostPath, p.SubPath
		}
		if !p.ClaimName.IsNull() {
			out.ClaimName = p.ClaimName
		}
		return out
	}
	return nil
}

// ---- validation -------------------------------------------------------------

func validateRayCluster(m *rayClusterModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if object.Known(m.Name) && len(m.Name.ValueString()+"-head-svc") > 63 {
		diags.AddAttributeError(tfpath.Root("name"), "Name too long",
			fmt.Sprintf("%q is %d characters; KubeRay's head Service %q must fit in 63, so the name may have at most 54.",
				m.Name.ValueString(), len(m.Name.ValueString()), m.Name.ValueString()+"-head-svc"))
	}
	seen := map[string]int{}
	for i, g := range m.WorkerGroups {
		p := tfpath.Root("worker_groups").AtListIndex(i)
		if object.Known(g.Name) {
			if j, dup := seen[g.Name.ValueString()]; dup {
				diags.AddAttributeError(p.AtName("name"), "Duplicate worker group",
					fmt.Sprintf("%q is also the name of worker_groups[%d]; group names must be unique.", g.Name.ValueString(), j))
			}
			seen[g.Name.ValueString()] = i
		}
		if object.Known(g.MinReplicas) && object.Known(g.Replicas) && g.Replicas.ValueInt64() < g.MinReplicas.ValueInt64() {
			diags.AddAttributeError(p.AtName("replicas"), "Replicas below min_replicas",
				fmt.Sprintf("replicas = %d is less than min_replicas = %d.", g.Replicas.ValueInt64(), g.MinReplicas.ValueInt64()))
		}
		if object.Known(g.MaxReplicas) && object.Known(g.Replicas) && g.Replicas.ValueInt64() > g.MaxReplicas.ValueInt64() {
			diags.AddAttributeError(p.AtName("replicas"), "Replicas above max_replicas",
				fmt.Sprintf("replicas = %d is more than max_replicas = %d.", g.Replicas.ValueInt64(), g.MaxReplicas.ValueInt64()))
		}
		if object.Known(g.MaxReplicas) && object.Known(g.MinReplicas) && g.MinReplicas.ValueInt64() > g.MaxReplicas.ValueInt64() {
			diags.AddAttributeError(p.AtName("min_replicas"), "min_replicas above max_replicas",
				fmt.Sprintf("min_replicas = %d is more than max_replicas = %d.", g.MinReplicas.ValueInt64(), g.MaxReplicas.ValueInt64()))
		}
	}
	if a := m.Autoscaling; a != nil && object.Known(a.IdleTimeout) {
		p := tfpath.Root("autoscaling").AtName("idle_timeout")
		if _, err := raySeconds(a.IdleTimeout); err != nil {
			diags.AddAttributeError(p, "Invalid idle timeout", fmt.Sprintf("%v (e.g. \"60s\", \"5m\").", err))
		} else if object.Known(a.Enabled) && !a.Enabled.ValueBool() {
			diags.AddAttributeWarning(p, "Idle timeout without autoscaling", "has no effect while autoscaling.enabled = false.")
		}
	}
	if mc := m.ModelCache; mc != nil {
		p := tfpath.Root("model_cache")
		mode := mc.Mode.ValueString()
		if mc.Mode.IsNull() {
			mode = modelcache.ModePVC // the default, not yet in the configuration
		}
		switch {
		case mc.Mode.IsUnknown():
		case mode == modelcache.ModePVC && mc.ClaimName.IsNull():
			diags.AddAttributeError(p.AtName("claim_name"), "Missing claim", "mode pvc mounts the cache's claim; give claim_name.")
		case mode == modelcache.ModeNodeLocal && mc.HostPath.IsNull():
			diags.AddAttributeError(p.AtName("host_path"), "Missing host path", "mode node_local mounts the node's copy; give host_path.")
		}
		if object.Known(mc.MountPath) && !strings.HasPrefix(mc.MountPath.ValueString(), "/") {
			diags.AddAttributeError(p.AtName("mount_path"), "Relative mount path", fmt.Sprintf("%q must be an absolute path.", mc.MountPath.ValueString()))
		}
		if object.Known(mc.SubPath) && (mc.SubPath.ValueString() == "" || strings.HasPrefix(mc.SubPath.ValueString(), "/") || strings.Contains(mc.SubPath.ValueString(), "..")) {
			diags.AddAttributeError(p.AtName("sub_path"), "Invalid sub path", fmt.Sprintf("%q must be a relative path inside the cache.", mc.SubPath.ValueString()))
		}
	}
	return diags
}

// planRayCluster computes the addresses and checks each worker group's GPUs
// against the live nodes its node selector matches (one listing per run).
func planRayCluster(ctx context.Context, c *kube.Client, m *rayClusterModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if object.Known(m.Name) && object.Known(m.Namespace) && (m.Head == nil || !m.Head.RayStartParams.IsUnknown()) {
		raySetAddresses(m, m.Name.ValueString(), m.Namespace.ValueString())
	}
	if c == nil {
		return diags
	}
	var nodes []corev1.Node
	for i, g := range m.WorkerGroups {
		if !object.Known(g.GPUs) || g.GPUs.ValueInt64() == 0 || !object.Known(g.NodeSelector) {
			continue
		}
		if nodes == nil {
			var err error
			if nodes, err = c.Nodes(ctx); err != nil {
				diags.AddError("Cannot read the cluster's nodes", err.Error())
				return diags
			}
		}
		p := tfpath.Root("worker_groups").AtListIndex(i).AtName("gpus")
		selector := object.Labels(g.NodeSelector)
		sel := capacity.Select(nodes, selector)
		if len(sel) == 0 {
			diags.AddAttributeWarning(p, "No node matches the worker group",
				fmt.Sprintf("%s: no node matches node_selector %s, so the GPUs per worker cannot be checked and the workers will stay Pending until such nodes join.",
					p, object.SelectorString(selector)))
			continue
		}
		most, where := int64(0), ""
		for _, n := range sel {
			q := n.Status.Allocatable[corev1.ResourceName(capacity.DefaultGPUResource)]
			if q.Value() > most || where == "" {
				most, where = q.Value(), n.Name
			}
		}
		if g.GPUs.ValueInt64() > most {
			diags.AddAttributeError(p, "More GPUs per worker than a node has",
				fmt.Sprintf("%s: each worker of group %q asks for %d GPUs, but the %d nodes matching node_selector %s have at most %d allocatable (%s); "+
					"no node could run a worker. Lower gpus to at most %d (and raise replicas), or select a pool with larger nodes.",
					p, g.Name.ValueString(), g.GPUs.ValueInt64(), len(sel), object.SelectorString(selector), most, where, most))
		}
	}
	return diags
}

// ---- readiness --------------------------------------------------------------

// waitRayCluster waits until KubeRay reports the cluster ready, logging each
// change of state and at least every 15 s. A suspended or queued cluster is
// not waited for: it runs when Kueue admits it.
func waitRayCluster(ctx context.Context, c *kube.Client, m *rayClusterModel) diag.Diagnostics {
	var diags diag.Diagnostics
	ref := m.ObjectRef()
	switch {
	case !m.WaitForReady.ValueBool():
		return diags
	case m.Suspend.ValueBool():
		tflog.Info(ctx, fmt.Sprintf("RayCluster %s is suspended: not waiting for it", ref))
		return diags
	case object.Known(m.QueueName):
		tflog.Info(ctx, fmt.Sprintf("RayCluster %s is queued in %q: it starts when Kueue admits it; not waiting", ref, m.QueueName.ValueString()))
		return diags
	}
	ctx, cancel := context.WithTimeout(ctx, rayWaitTimeout)
	defer cancel()
	start := time.Now()
	last, lastAt := "", time.Time{}
	for {
		live, found, err := c.Get(ctx, rayClusterKind, ref)
		if err != nil && ctx.Err() == nil {
			diags.AddError(fmt.Sprintf("Waiting for RayCluster %s failed", ref), err.Error())
			return diags
		}
		if found {
			readRayCluster(live.Object, m)
			m.SetObjectRef(ref)
			state, line := rayProgress(live.Object)
			if state == rayReadyState {
				tflog.Info(ctx, fmt.Sprintf("RayCluster %s ready after %s: %s", ref, time.Since(start).Round(100*time.Millisecond), line))
				return diags
			}
			if line != last || time.Since(lastAt) >= 15*time.Second {
				tflog.Info(ctx, fmt.Sprintf("RayCluster %s not ready after %s: %s", ref, time.Since(start).Round(time.Second), line))
				last, lastAt = line, time.Now()
			}
		}
		select {
		case <-ctx.Done():
			detail := fmt.Sprintf("KubeRay did not report the RayCluster ready within %s; last seen: %s.", rayWaitTimeout, last)
			if pods := rayPendingPods(context.Background(), c, ref); pods != "" {
				detail += " Pods not ready: " + pods + "."
			}
			diags.AddError(fmt.Sprintf("RayCluster %s not ready", ref), detail+
				" Is the KubeRay operator running, and do the nodes have room for every pod? Set wait_for_ready = false not to wait.")
			return diags
		case <-time.After(time.Second):
		}
	}
}

// rayProgress is the cluster's state and a one-line summary of its status.
func rayProgress(live map[string]any) (state, line string) {
	status := object.Fields(live, "status")
	state, _ = status["state"].(string)
	desired := object.Int64(status["desiredWorkerReplicas"]).ValueInt64()
	ready := object.Int64(status["readyWorkerReplicas"]).ValueInt64()
	// KubeRay 1.5 writes its status only when something in it changes, so
	// observedGeneration lags behind a change that alters no status field
	// (an idle timeout, say): it cannot tell whether the spec was seen. The
	// worker counts can: the status must want what the spec asks for, and
	// have that many ready.
	if want := rayDesiredWorkers(live); state != "" && (desired != want || ready < desired) {
		state = ""
	}
	s := state
	if s == "" {
		s = "no state yet"
	}
	line = fmt.Sprintf("state %s, %d of %d workers ready", s, ready, desired)
	if r, _ := status["reason"].(string); r != "" {
		line += ", " + r
	}
	return state, line
}

// rayDesiredWorkers is the number of worker pods the spec asks for, as
// KubeRay 1.5 counts it (utils.GetWorkerGroupDesiredReplicas): each group's
// replicas kept within min…max (none while the group is suspended), times its
// hosts per replica.
func rayDesiredWorkers(live map[string]any) int64 {
	var n int64
	for _, g := range object.Items(live, "spec", "workerGroupSpecs") {
		if g["suspend"] == true {
			continue
		}
		replicas := object.Int64(g["replicas"]).ValueInt64()
		if lo := object.Int64(g["minReplicas"]); !lo.IsNull() && replicas < lo.ValueInt64() {
			replicas = lo.ValueInt64()
		}
		if hi := object.Int64(g["maxReplicas"]); !hi.IsNull() && replicas > hi.ValueInt64() {
			replicas = hi.ValueInt64()
		}
		hosts := object.Int64(g["numOfHosts"])
		if hosts.IsNull() || hosts.ValueInt64() < 1 {
			hosts = types.Int64Value(1)
		}
		n += replicas * hosts.ValueInt64()
	}
	return n
}

func rayPendingPods(ctx context.Context, c *kube.Client, ref kube.Ref) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	pods, err := c.PodsMatching(ctx, ref.Namespace, "ray.io/cluster="+ref.Name)
	if err != nil {
		return ""
	}
	var out []string
	for _, p := range pods {
		ready := false
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if ready {
			continue
		}
		why := string(p.Status.Phase)
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status != corev1.ConditionTrue && cond.Message != "" {
				why += " (" + cond.Message + ")"
			}
		}
		out = append(out, p.Name+" "+why)
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}
