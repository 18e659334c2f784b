package serving

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/modelcache"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// The pod templates of a LeaderWorkerSet: one container each, mapped to and
// from the object's unstructured fields.

// containerName is the name of the container the provider manages in a
// leader or worker pod when container_name is unset.
const containerName = "main"

// lwsEnvPrefix marks the variables the LWS controller injects (LWS_LEADER_ADDRESS, …).
const lwsEnvPrefix = "LWS_"

type podTemplateModel struct {
	ContainerName types.String        `tfsdk:"container_name"`
	Image         types.String        `tfsdk:"image"`
	Command       []types.String      `tfsdk:"command"`
	Args          []types.String      `tfsdk:"args"`
	Env           types.Map           `tfsdk:"env"`
	GPUs          types.Int64         `tfsdk:"gpus"`
	CPU           types.String        `tfsdk:"cpu"`
	Memory        types.String        `tfsdk:"memory"`
	NodeSelector  types.Map           `tfsdk:"node_selector"`
	Tolerations   []object.Toleration `tfsdk:"tolerations"`
}

var (
	singleDir = regexp.MustCompile(`^[^/]+$`)
	absPath   = regexp.MustCompile(`^/`)
)

// modelCacheModel is what an LWS group or a Ray cluster needs of an
// aiplatform_model_cache: its computed attributes of the same names.
type modelCacheModel struct {
	Mode      types.String `tfsdk:"mode"`
	ClaimName types.String `tfsdk:"claim_name"`
	HostPath  types.String `tfsdk:"host_path"`
	SubPath   types.String `tfsdk:"sub_path"`
	MountPath types.String `tfsdk:"mount_path"`
}

func templateAttribute(desc string, required bool) schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Required: required, Optional: !required,
		MarkdownDescription: desc,
		Attributes: map[string]schema.Attribute{
			"container_name": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Name of the container these attributes describe; `main` when unset. An imported object's container " +
					"keeps its name here, so an apply changes that container — never adds one of another name beside it. " +
					"Other containers of an adopted pod (sidecars) are left to whoever manages them.",
				Validators: []validator.String{validators.DNSLabel()}},
			"image": schema.StringAttribute{Required: true, MarkdownDescription: "Container image.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)}},
			"command": schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Entrypoint; the image's when unset."},
			"args":    schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Arguments."},
			"env": schema.MapAttribute{ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Environment variables, name → value. The LWS controller adds `LWS_LEADER_ADDRESS`, `LWS_GROUP_SIZE` and `LWS_WORKER_INDEX` to every pod."},
			"gpus": schema.Int64Attribute{Optional: true, MarkdownDescription: "`nvidia.com/gpu` of the pod (request and limit).",
				Validators: []validator.Int64{int64validator.Between(0, 1024)}},
			"cpu":    schema.StringAttribute{Optional: true, MarkdownDescription: "CPU request, e.g. `\"8\"`.", Validators: []validator.String{validators.Quantity()}},
			"memory": schema.StringAttribute{Optional: true, MarkdownDescription: "Memory request, e.g. `\"64Gi\"`.", Validators: []validator.String{validators.Quantity()}},
			"node_selector": schema.MapAttribute{ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Labels of the nodes the pod may run on: the GPU pool. The plan checks the pod's GPUs against these live nodes.",
				Validators:          []validator.Map{validators.Labels()}},
			"tolerations": object.TolerationsAttribute("Taints the pod tolerates (GPU pools are commonly tainted)."),
		},
	}
}

func modelCacheAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "A warmed `aiplatform_model_cache`, mounted read-only into every leader and worker pod: " +
			"pass its attributes of the same names. With `serving`, the startup probe assumes this cache's read throughput " +
			"(200 MiB/s from a claim, 1 GiB/s node-local).",
		Attributes: map[string]schema.Attribute{
			"mode": schema.StringAttribute{Required: true, MarkdownDescription: "`pvc` or `node_local`.",
				Validators: []validator.String{stringvalidator.OneOf(modelcache.ModePVC, modelcache.ModeNodeLocal)}},
			"claim_name": schema.StringAttribute{Optional: true, MarkdownDescription: "The cache's claim (mode `pvc`).", Validators: []validator.String{validators.DNSSubdomain()}},
			"host_path":  schema.StringAttribute{Optional: true, MarkdownDescription: "The cache's directory on each node (mode `node_local`)."},
			"sub_path": schema.StringAttribute{Required: true, MarkdownDescription: "The warmed revision's directory.",
				Validators: []validator.String{stringvalidator.RegexMatches(singleDir, "must be one directory name")}},
			"mount_path": schema.StringAttribute{Required: true, MarkdownDescription: "Where the weights appear in the containers.",
				Validators: []validator.String{stringvalidator.RegexMatches(absPath, "must be an absolute path")}},
		},
	}
}

func (c *modelCacheModel) cache() modelcache.Cache {
	if c == nil {
		return modelcache.Cache{}
	}
	return modelcache.Cache{Mode: c.Mode.ValueString(), ClaimName: c.ClaimName.ValueString(), HostPath: c.HostPath.ValueString(),
		SubPath: c.SubPath.ValueString(), MountPath: c.MountPath.ValueString()}
}

// gpus is the template's GPUs, 0 when unset.
func (t *podTemplateModel) gpus() int64 {
	if t == nil || !object.Known(t.GPUs) {
		return 0
	}
	return t.GPUs.ValueInt64()
}

// templateOut builds a PodTemplateSpec: one container, the cache's volume
// and, when probe is not nil, the startup probe.
func templateOut(t *podTemplateModel, cache *modelCacheModel, probe map[string]any) map[string]any {
	c := map[string]any{"name": t.containerName(), "image": t.Image.ValueString()}
	object.Put(c, "command", object.ListOut(t.Command))
	object.Put(c, "args", object.ListOut(t.Args))
	if env := object.MapOut(t.Env); len(env) > 0 {
		names := make([]string, 0, len(env))
		for k := range env {
			names = append(names, k)
		}
		sort.Strings(names)
		list := make([]any, len(names))
		for i, n := range names {
			list[i] = map[string]any{"name": n, "value": env[n]}
		}
		c["env"] = list
	}
	requests, limits := map[string]any{}, map[string]any{}
	object.Put(requests, "cpu", t.CPU)
	object.Put(requests, "memory", t.Memory)
	if g := t.gpus(); g > 0 {
		requests[capacity.DefaultGPUResource] = fmt.Sprint(g)
		limits[capacity.DefaultGPUResource] = fmt.Sprint(g)
	}
	res := map[string]any{}
	if len(requests) > 0 {
		res["requests"] = requests
	}
	if len(limits) > 0 {
		res["limits"] = limits
	}
	if len(res) > 0 {
		c["resources"] = res
	}
	if probe != nil {
		c["startupProbe"] = probe
	}
	spec := map[string]any{}
	if cache != nil {
		vol, mount, err := cache.cache().Mount(modelcache.DefaultVolumeName)
		if err == nil { // Validate has refused an incomplete cache
			c["volumeMounts"] = []any{mustUnstructured(&mount)}
			spec["volumes"] = []any{mustUnstructured(&vol)}
		}
	}
	spec["containers"] = []any{c}
	object.Put(spec, "nodeSelector", object.MapOut(t.NodeSelector))
	if len(t.Tolerations) > 0 {
		spec["tolerations"] = object.TolerationsToObject(t.Tolerations)
	}
	return map[string]any{"spec": spec}
}

func mustUnstructured(obj any) map[string]any {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(err) // typed API structs always convert
	}
	return m
}

// containerName is the managed container's name.
func (t *podTemplateModel) containerName() string {
	if t != nil && object.Known(t.ContainerName) && t.ContainerName.ValueString() != "" {
		return t.ContainerName.ValueString()
	}
	return containerName
}

// mainContainer is the template's container of the given name (containerName
// when ""), or its first.
func mainContainer(tmpl map[string]any, name ...string) map[string]any {
	want := containerName
	if len(name) > 0 && name[0] != "" {
		want = name[0]
	}
	containers := object.Items(tmpl, "spec", "containers")
	for _, c := range containers {
		if c["name"] == want {
			return c
		}
	}
	if len(containers) > 0 {
		return containers[0]
	}
	return nil
}

// templateIn reads a pod template into the model; prior (may be nil) keeps
// the user's spellings.
func templateIn(tmpl map[string]any, prior *podTemplateModel) *podTemplateModel {
	if tmpl == nil {
		return nil
	}
	var p podTemplateModel
	if prior != nil {
		p = *prior
	}
	c := mainContainer(tmpl, p.containerName())
	if c == nil {
		c = map[string]any{}
	}
	t := &podTemplateModel{
		// Adopted from the live object; left null for the default name.
		ContainerName: object.String(c["name"], p.ContainerName),
		Image:         object.String(c["image"], p.Image),
		Command:       object.StringList(c["command"], p.Command),
		Args:          object.StringList(c["args"], p.Args),
		CPU:           object.Quantity(object.Field(c, "resources", "requests", "cpu"), p.CPU),
		Memory:        object.Quantity(object.Field(c, "resources", "requests", "memory"), p.Memory),
	}
	// Injected variables are not the user's unless they were set.
	priorEnv := object.MapOut(p.Env)
	env := map[string]any{}
	for _, e := range object.Items(c, "env") {
		name, _ := e["name"].(string)
		if _, mine := priorEnv[name]; strings.HasPrefix(name, lwsEnvPrefix) && !mine {
			continue
		}
		if _, ref := e["valueFrom"]; ref {
			// A Secret, ConfigMap or field reference is not a value the
			// typed env map can carry: read as "" it would be written
			// back as an empty literal.
			continue
		}
		v, _ := e["value"].(string)
		env[name] = v
	}
	t.Env = object.StringMap(env, p.Env)
	if p.ContainerName.IsNull() && t.ContainerName.ValueString() == containerName {
		t.ContainerName = types.StringNull()
	}
	gpus := object.Field(c, "resources", "limits", capacity.DefaultGPUResource)
	if gpus == nil {
		gpus = object.Field(c, "resources", "requests", capacity.DefaultGPUResource)
	}
	t.GPUs = types.Int64Null()
	if g := object.Quantity(gpus, types.StringNull()); !g.IsNull() {
		if q, err := validators.ParseQuantity(g.ValueString()); err == nil {
			t.GPUs = types.Int64Value(q.Value())
		}
	}
	spec := object.Fields(tmpl, "spec")
	t.NodeSelector = object.StringMap(spec["nodeSelector"], p.NodeSelector)
	t.Tolerations = object.ReadTolerations(object.List(spec, "tolerations"), p.Tolerations)
	return t
}

// modelCacheIn reads the cache's volume (named modelcache.DefaultVolumeName) back.
func modelCacheIn(tmpl map[string]any, prior *modelCacheModel) *modelCacheModel {
	var vol map[string]any
	for _, v := range object.Items(tmpl, "spec", "volumes") {
		if v["name"] == modelcache.DefaultVolumeName {
			vol = v
		}
	}
	if vol == nil {
		return nil
	}
	var p modelCacheModel
	if prior != nil {
		p = *prior
	}
	var mount map[string]any
	for _, c := range object.Items(tmpl, "spec", "containers") {
		for _, m := range object.Items(c, "volumeMounts") {
			if m["name"] == modelcache.DefaultVolumeName && mount == nil {
				mount = m
			}
		}
	}
	out := &modelCacheModel{
		MountPath: object.String(mount["mountPath"], p.MountPath),
		ClaimName: types.StringNull(), HostPath: types.StringNull(),
	}
	switch {
	case object.Fields(vol, "persistentVolumeClaim") != nil:
		out.Mode = types.StringValue(modelcache.ModePVC)
		out.ClaimName = object.String(object.Field(vol, "persistentVolumeClaim", "claimName"), p.ClaimName)
		out.SubPath = object.String(mount["subPath"], p.SubPath)
	case object.Fields(vol, "hostPath") != nil:
		out.Mode = types.StringValue(modelcache.ModeNodeLocal)
		full, _ := object.Field(vol, "hostPath", "path").(string)
		out.HostPath = object.String(path.Dir(full), p.HostPath)
		out.SubPath = object.String(path.Base(full), p.SubPath)
	default:
		return prior
	}
	return out
}
