package serving

import (
	"fmt"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/modelcache"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// The pod templates of a LeaderWorkerSet: the shared pod-template model
// (podtemplate.Template: containers named by the user or adopted from the
// live object, requests and limits apart, ports, volumes, env from
// Secrets, sidecars, the pod_template overlay for the long tail), plus a
// shorthand for a pod of one container (image, gpus, cpu, memory, …) that
// configurations written before the shared model use.

// containerName is the name of the shorthand's container when
// container_name is unset. It is only ever used for a container the
// shorthand creates: an import adopts the live names.
const containerName = "main"

// lwsEnvPrefix marks the variables the LWS controller injects into pods
// (LWS_LEADER_ADDRESS, …); the shorthand's env never reads them back.
const lwsEnvPrefix = "LWS_"

// podTemplateModel is a leader or worker template: the shorthand's
// attributes beside the shared model's. Either image (the shorthand) or
// containers is set.
type podTemplateModel struct {
	ContainerName types.String   `tfsdk:"container_name"`
	Image         types.String   `tfsdk:"image"`
	Command       []types.String `tfsdk:"command"`
	Args          []types.String `tfsdk:"args"`
	Env           types.Map      `tfsdk:"env"`
	GPUs          types.Int64    `tfsdk:"gpus"`
	CPU           types.String   `tfsdk:"cpu"`
	Memory        types.String   `tfsdk:"memory"`
	podtemplate.Template
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

// shorthandAttributes are the attributes of the one-container shorthand.
var shorthandAttributes = []string{"container_name", "image", "command", "args", "env", "gpus", "cpu", "memory"}

func templateAttribute(desc string, required bool) schema.SingleNestedAttribute {
	attrs := podtemplate.Attributes()
	containers := attrs["containers"].(schema.ListNestedAttribute)
	containers.Required, containers.Optional, containers.Validators = false, true, nil
	containers.MarkdownDescription = "The pod's containers, the model server first (it gets the `model_cache` mount and, with `serving`, " +
		"the startup probe) and any sidecars after it; or set `image` and the shorthand attributes for a pod of one container. " +
		"An imported object's containers keep their names: a container is only ever changed by its name, never added beside one of another name."
	attrs["containers"] = containers
	shorthand := " Shorthand for a pod of one container, with `image`; with `containers`, leave it unset and set the container's own attribute."
	attrs["container_name"] = schema.StringAttribute{Optional: true,
		MarkdownDescription: "Name of the shorthand's container; `main` when unset. An import keeps the live container's name." + shorthand,
		Validators:          []validator.String{validators.DNSLabel()}}
	attrs["image"] = schema.StringAttribute{Optional: true,
		MarkdownDescription: "Container image of a pod of one container (the shorthand); set this or `containers`.",
		Validators:          []validator.String{stringvalidator.LengthAtLeast(1)}}
	attrs["command"] = schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Entrypoint; the image's when unset." + shorthand}
	attrs["args"] = schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Arguments." + shorthand}
	attrs["env"] = schema.MapAttribute{ElementType: types.StringType, Optional: true,
		MarkdownDescription: "Environment variables, name → value. The LWS controller adds `LWS_LEADER_ADDRESS`, `LWS_GROUP_SIZE` and `LWS_WORKER_INDEX` to every pod." + shorthand}
	attrs["gpus"] = schema.Int64Attribute{Optional: true, MarkdownDescription: "`nvidia.com/gpu` of the pod (request and limit)." + shorthand,
		Validators: []validator.Int64{int64validator.Between(0, 1024)}}
	attrs["cpu"] = schema.StringAttribute{Optional: true, MarkdownDescription: "CPU request, e.g. `\"8\"`." + shorthand, Validators: []validator.String{validators.Quantity()}}
	attrs["memory"] = schema.StringAttribute{Optional: true, MarkdownDescription: "Memory request, e.g. `\"64Gi\"`." + shorthand, Validators: []validator.String{validators.Quantity()}}
	attrs["node_selector"] = schema.MapAttribute{ElementType: types.StringType, Optional: true,
		MarkdownDescription: "Labels of the nodes the pods may run on: the GPU pool. The plan checks the pod's GPUs against these live nodes.",
		Validators:          []validator.Map{validators.Labels()}}
	return schema.SingleNestedAttribute{Required: required, Optional: !required, MarkdownDescription: desc, Attributes: attrs}
}

func modelCacheAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "A warmed `aiplatform_model_cache`, mounted read-only into the model server (the shorthand's container, " +
			"else the first of `containers`) of every leader and worker pod, as the volume `" + modelcache.DefaultVolumeName + "` (which sidecars may mount too): " +
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

// shorthand says whether the template is written with image (the
// one-container shorthand) rather than containers.
func (t *podTemplateModel) shorthand() bool {
	return t != nil && !t.Image.IsNull()
}

// gpus is the GPUs of one pod: the shorthand's gpus, or what the containers
// ask the scheduler for (podtemplate.Template.Request); 0 when unset.
func (t *podTemplateModel) gpus() int64 {
	if t == nil {
		return 0
	}
	if t.shorthand() {
		if !object.Known(t.GPUs) {
			return 0
		}
		return t.GPUs.ValueInt64()
	}
	q := t.Request(capacity.DefaultGPUResource)
	return q.Value()
}

// gpusKnown says whether gpus is final (no value unknown until apply).
func (t *podTemplateModel) gpusKnown() bool {
	if t == nil {
		return true
	}
	if t.shorthand() || t.Image.IsUnknown() {
		return !t.GPUs.IsUnknown() && !t.Image.IsUnknown()
	}
	for _, list := range [][]podtemplate.Container{t.Containers, t.InitContainers} {
		for _, c := range list {
			for _, m := range []types.Map{c.Requests, c.Limits} {
				if m.IsUnknown() {
					return false
				}
				for _, v := range m.Elements() {
					if v.IsUnknown() {
						return false
					}
				}
			}
		}
	}
	return true
}

// containerName is the shorthand container's name.
func (t *podTemplateModel) containerName() string {
	if t != nil && object.Known(t.ContainerName) && t.ContainerName.ValueString() != "" {
		return t.ContainerName.ValueString()
	}
	return containerName
}

// shorthandContainer is the shorthand as a container of the shared model.
func (t *podTemplateModel) shorthandContainer() podtemplate.Container {
	c := podtemplate.Container{
		Name: types.StringValue(t.containerName()), Image: t.Image, Command: t.Command, Args: t.Args,
		Requests: types.MapNull(types.StringType), Limits: types.MapNull(types.StringType),
	}
	env := object.MapOut(t.Env)
	for _, name := range sortedNames(env) {
		c.Env = append(c.Env, podtemplate.EnvVar{Name: types.StringValue(name), Value: types.StringValue(env[name].(string))})
	}
	requests, limits := map[string]attr.Value{}, map[string]attr.Value{}
	for k, v := range map[string]types.String{"cpu": t.CPU, "memory": t.Memory} {
		if object.Known(v) {
			requests[k] = v
		}
	}
	if object.Known(t.GPUs) && t.GPUs.ValueInt64() > 0 {
		g := types.StringValue(resource.NewQuantity(t.GPUs.ValueInt64(), resource.DecimalSI).String())
		requests[capacity.DefaultGPUResource], limits[capacity.DefaultGPUResource] = g, g
	}
	if len(requests) > 0 {
		c.Requests = types.MapValueMust(types.StringType, requests)
	}
	if len(limits) > 0 {
		c.Limits = types.MapValueMust(types.StringType, limits)
	}
	return c
}

func mustUnstructured(obj any) map[string]any {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(err) // typed API structs always convert
	}
	return m
}

// validateTemplate checks a leader or worker template at p: one form
// (image or containers), the shared model's checks, and nothing that the
// group sets itself (the cache's volume, the server's startup probe when
// probed).
func validateTemplate(t *podTemplateModel, p path.Path, cached, probed bool) diag.Diagnostics {
	var diags diag.Diagnostics
	if t == nil {
		return diags
	}
	bad := func(at path.Path, format string, args ...any) {
		diags.AddAttributeError(at, "Invalid pod template", at.String()+": "+fmt.Sprintf(format, args...))
	}
	if !t.Image.IsUnknown() {
		switch {
		case t.Image.IsNull() && len(t.Containers) == 0:
			bad(p.AtName("containers"), "set containers, or image (and the shorthand's attributes) for a pod of one container")
		case !t.Image.IsNull() && len(t.Containers) > 0:
			bad(p.AtName("containers"), "set image (the shorthand for a pod of one container) or containers, not both")
		case t.Image.IsNull():
			set := map[string]bool{"container_name": !t.ContainerName.IsNull(), "command": t.Command != nil, "args": t.Args != nil,
				"env": !t.Env.IsNull(), "gpus": !t.GPUs.IsNull(), "cpu": !t.CPU.IsNull(), "memory": !t.Memory.IsNull()}
			for _, name := range shorthandAttributes {
				if set[name] {
					bad(p.AtName(name), "belongs to the shorthand (with image); with containers, set it on the container itself")
				}
			}
		}
	}
	if t.shorthand() {
		if c := t.Container(t.containerName()); c != nil {
			bad(p.AtName("init_containers"), "an init container is named %q like the container of image", t.containerName())
		}
	}
	var extra []string
	if cached {
		extra = append(extra, modelcache.DefaultVolumeName)
		for i, v := range t.Volumes {
			if v.Name.ValueString() == modelcache.DefaultVolumeName {
				bad(p.AtName("volumes").AtListIndex(i).AtName("name"), "%q is the model_cache's volume, which the group adds itself", modelcache.DefaultVolumeName)
			}
		}
	}
	if probed && !t.shorthand() && len(t.Containers) > 0 {
		c := t.Containers[0]
		for field, set := range map[string]bool{"startup_probe": c.StartupProbe != nil, "liveness_probe": c.LivenessProbe != nil, "readiness_probe": c.ReadinessProbe != nil} {
			if set {
				bad(p.AtName("containers").AtListIndex(0).AtName(field),
					"serving sets the leader's model server's startup, liveness and readiness probes (from the model's size, health_path and readiness_path); "+
						"leave it unset here (without a leader block the leader runs the worker template: add a leader block to give the workers probes of their own)")
			}
		}
	}
	diags.Append(podtemplate.Validate(&t.Template, p, extra...)...)
	return diags
}
