package serving

import (
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// aiplatform_serving_runtime: a KServe ClusterServingRuntime, or a
// namespaced ServingRuntime when namespace is set — the model server an
// InferenceService's predictor runs. Its pod is a model server's pod as
// aiplatform_model_deployment builds it (the managed container's GPUs,
// probes and read-only model cache, the same fit and tensor-parallel rules
// at plan), laid out as KServe's ServingRuntimePodSpec. Split by verb: this
// file is the schema and model, _plan the checks, _object the object both
// ways, _import the import's report.

const (
	// runtimeContainer is the container KServe merges an InferenceService's
	// predictor into (constants.InferenceServiceContainerName).
	runtimeContainer = "kserve-container"
	runtimePort      = 8080
	// runtimeSizingAnnotation records the sizing inputs a ServingRuntime
	// does not carry, so an import gets them back.
	runtimeSizingAnnotation = "aiplatform.io/model-sizing"
)

var (
	// ClusterServingRuntimeKind is KServe's cluster-scoped runtime.
	ClusterServingRuntimeKind = catalog.ClusterServingRuntimeKind
	// ServingRuntimeKind is KServe's namespaced runtime.
	ServingRuntimeKind = catalog.ServingRuntimeKind
)

// protocolVersions are KServe v0.20's InferenceServiceProtocol values.
var protocolVersions = []string{"v1", "v2", "grpc-v1", "grpc-v2"}

type servingRuntimeModel struct {
	ID        types.String `tfsdk:"id"`
	Name      types.String `tfsdk:"name"`
	Namespace types.String `tfsdk:"namespace"`
	object.LiveChanges
	ModelFormats        []runtimeFormat       `tfsdk:"supported_model_formats"`
	ProtocolVersions    []types.String        `tfsdk:"protocol_versions"`
	MultiModel          types.Bool            `tfsdk:"multi_model"`
	Disabled            types.Bool            `tfsdk:"disabled"`
	Template            *podtemplate.Template `tfsdk:"template"`
	Container           types.String          `tfsdk:"container"`
	Model               *deployModelSpec      `tfsdk:"model"`
	GPUsPerReplica      types.Int64           `tfsdk:"gpus_per_replica"`
	GPUMemory           types.String          `tfsdk:"gpu_memory"`
	ReserveFraction     types.Float64         `tfsdk:"reserve_fraction"`
	OverheadBytesPerGPU types.Int64           `tfsdk:"overhead_bytes_per_gpu"`
	LoadBytesPerSecond  types.Int64           `tfsdk:"load_bytes_per_second"`
	Port                types.Int64           `tfsdk:"port"`
	LivenessPath        types.String          `tfsdk:"liveness_path"`
	ReadinessPath       types.String          `tfsdk:"readiness_path"`
	ModelCache          *deployCache          `tfsdk:"model_cache"`

	Kind                    types.String `tfsdk:"kind"`
	Fit                     types.String `tfsdk:"fit"`
	MaxConcurrency          types.Int64  `tfsdk:"max_concurrency_per_replica"`
	EstimatedLoadSeconds    types.Int64  `tfsdk:"estimated_load_seconds"`
	StartupFailureThreshold types.Int64  `tfsdk:"startup_failure_threshold"`
}

// runtimeFormat is one of spec.supportedModelFormats.
type runtimeFormat struct {
	Name       types.String `tfsdk:"name"`
	Version    types.String `tfsdk:"version"`
	AutoSelect types.Bool   `tfsdk:"auto_select"`
	Priority   types.Int64  `tfsdk:"priority"`
}

// ObjectRef names the runtime: by namespace/name when namespaced.
func (m *servingRuntimeModel) ObjectRef() kube.Ref {
	return kube.Ref{Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString()}
}

// SetObjectRef sets name, namespace (null for a cluster runtime) and id.
func (m *servingRuntimeModel) SetObjectRef(r kube.Ref) {
	m.Name = types.StringValue(r.Name)
	m.Namespace = types.StringNull()
	m.Kind = types.StringValue(ClusterServingRuntimeKind.Kind)
	if r.Namespace != "" {
		m.Namespace = types.StringValue(r.Namespace)
		m.Kind = types.StringValue(ServingRuntimeKind.Kind)
	}
	m.ID = types.StringValue(r.String())
}

// server is the runtime's pod as the model deployment's arithmetic and
// pod-building code see it: the same managed container, probes, GPUs and
// cache, so that both resources size and probe a model server one way.
func (m *servingRuntimeModel) server() *modelDeploymentModel {
	d := &modelDeploymentModel{
		Template: m.Template, Container: m.Container, Model: m.Model, GPUsPerReplica: m.GPUsPerReplica, GPUMemory: m.GPUMemory,
		ReserveFraction: m.ReserveFraction, OverheadBytesPerGPU: m.OverheadBytesPerGPU, LoadBytesPerSecond: m.LoadBytesPerSecond,
		Replicas: types.Int64Value(1), AllowScaleToZero: types.BoolValue(false), Port: m.Port, LivenessPath: m.LivenessPath,
		ReadinessPath: m.ReadinessPath, ServicePort: types.Int64Null(), ModelCache: m.ModelCache, QueueName: types.StringNull(),
		WaitForReady: types.BoolValue(false), Timeout: types.StringNull(),
		Fit: m.Fit, MaxConcurrency: m.MaxConcurrency, EstimatedLoadSeconds: m.EstimatedLoadSeconds, StartupFailureThreshold: m.StartupFailureThreshold,
	}
	d.Name, d.Namespace = m.Name, m.Namespace
	return d
}

// fromServer takes back what the deployment code computed.
func (m *servingRuntimeModel) fromServer(d *modelDeploymentModel) {
	m.GPUMemory, m.Fit, m.MaxConcurrency = d.GPUMemory, d.Fit, d.MaxConcurrency
	m.EstimatedLoadSeconds, m.StartupFailureThreshold = d.EstimatedLoadSeconds, d.StartupFailureThreshold
}

// NewServingRuntime is aiplatform_serving_runtime.
func NewServingRuntime() resource.Resource {
	spec := object.Spec[servingRuntimeModel]{
		TypeName: "serving_runtime",
		Kind:     ClusterServingRuntimeKind,
		Description: "A KServe serving runtime (`serving.kserve.io/v1alpha1`): a `ClusterServingRuntime`, or a namespaced `ServingRuntime` " +
			"when `namespace` is set — the model server (vLLM, SGLang, …) that InferenceServices whose model format it supports run " +
			"(`spec.predictor.model.runtime`, or chosen by `auto_select` and `priority`). Typed: the supported model formats, protocol " +
			"versions and multi-model flag; the pod through the shared pod-template attributes (`template`: the image, args, env with " +
			"Secret references, CPU and memory, node selector and tolerations — typically an `aiplatform_gpu_node_pool`'s — volumes); " +
			"the managed container (`container`, default `kserve-container`, the one KServe merges a predictor into) gets `gpus_per_replica` " +
			"GPUs, the model cache mounted read-only and three probes.\n\n" +
			"When `model` is given the plan sizes it with the same rules as `aiplatform_model_deployment` and " +
			"`data.aiplatform_inference_sizing` and refuses, with the numbers, a replica that cannot serve: weights ÷ `gpus_per_replica` + " +
			"the KV cache of one request at `context_length` ÷ `gpus_per_replica` + `overhead_bytes_per_gpu` must fit one GPU's memory after " +
			"`reserve_fraction`; `gpus_per_replica` (the tensor parallelism) must divide the attention heads and divide or be a multiple of the " +
			"KV heads; and, with `template.node_selector` set, it must not exceed the allocatable GPUs of the live nodes it matches.\n\n" +
			"Probes: a startup probe on `liveness_path` whose failure threshold covers loading the weights (weights ÷ `load_bytes_per_second`, " +
			"plus 60 s, times 2, in 10 s periods; without `model` only the 60 s × 2, and the plan warns); a liveness probe on the server's own " +
			"`liveness_path`, which Kubernetes holds until the startup probe has passed (a path that checks readiness or a dependency is refused); " +
			"a separate readiness probe on `readiness_path`.",
		Attributes:    servingRuntimeAttributes(),
		Fields:        servingRuntimeFields,
		Read:          readServingRuntime,
		Validate:      validateServingRuntime,
		ModifyPlan:    planServingRuntime,
		ImportReport:  runtimeImportReport,
		ImportCarrier: "template.pod_template",
	}
	namespaced := spec
	namespaced.Kind = ServingRuntimeKind
	return object.NewScoped[servingRuntimeModel](spec, namespaced)
}

func servingRuntimeAttributes() map[string]schema.Attribute {
	shared := modelDeploymentAttributes()
	model := shared["model"].(schema.SingleNestedAttribute)
	model.Required, model.Optional = false, true
	model.MarkdownDescription = "The model this runtime serves, for the fit and tensor-parallel rules and the startup probe. Unset: no sizing " +
		"(a runtime for many models), and the startup probe allows only the 120 s of a model that loads instantly. Recorded in an annotation, so an import reads it back."
	gpuMemory := shared["gpu_memory"].(schema.StringAttribute)
	gpuMemory.MarkdownDescription = "One GPU's memory as a quantity (`\"80Gi\"`). Unset: the smallest `nvidia.com/gpu.memory` label (MiB) of the live nodes matching " +
		"`template.node_selector`, read at plan time when `model` is set (null without `model`)."
	attrs := map[string]schema.Attribute{
		"namespace": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Namespace of a namespaced `ServingRuntime`, which only that namespace's InferenceServices use; unset: a " +
				"`ClusterServingRuntime` for every namespace. Changing it replaces the runtime.",
			PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			Validators:    []validator.String{validators.DNSLabel()}},
		"supported_model_formats": schema.ListNestedAttribute{Required: true,
			MarkdownDescription: "Model formats the runtime serves (an InferenceService's `spec.predictor.model.modelFormat`). KServe picks a runtime " +
				"for a model without `runtime` among those whose format has `auto_select`, the highest `priority` first.",
			Validators: []validator.List{listvalidator.SizeAtLeast(1)},
			NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
				"name": schema.StringAttribute{Required: true, MarkdownDescription: "Format, e.g. `vLLM`, `huggingface`, `pytorch`.",
					Validators: []validator.String{stringvalidator.LengthBetween(1, 63)}},
				"version": schema.StringAttribute{Optional: true, MarkdownDescription: "Version of the format, e.g. `1`."},
				"auto_select": schema.BoolAttribute{Optional: true,
					MarkdownDescription: "Whether KServe may choose this runtime for a model of this format that names no runtime."},
				"priority": schema.Int64Attribute{Optional: true,
					MarkdownDescription: "Among auto-selected runtimes of the same format and protocol, the highest wins; needs `auto_select`. KServe refuses " +
						"two runtimes with the same format, protocol and priority, and one format with two priorities in one runtime.",
					Validators: []validator.Int64{int64validator.Between(1, 1<<31-1)}},
			}}},
		"protocol_versions": schema.ListAttribute{ElementType: types.StringType, Optional: true,
			MarkdownDescription: "Inference protocols the server speaks: `v1`, `v2`, `grpc-v1`, `grpc-v2` (KServe's default when unset: `v1`).",
			Validators: []validator.List{listvalidator.SizeAtLeast(1), listvalidator.UniqueValues(),
				listvalidator.ValueStringsAre(stringvalidator.OneOf(protocolVersions...))}},
		"multi_model": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			MarkdownDescription: "A ModelMesh runtime serving many models per pod. Default `false`."},
		"disabled": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			MarkdownDescription: "Keep the runtime but let no new InferenceService use it. Default `false`."},
		"template": podtemplate.Attribute("The runtime's pod: containers (one of them the managed `container`), volumes, node selector, tolerations, "+
			"affinity, image pull secrets, labels and annotations (KServe's ServingRuntimePodSpec). Init containers, the service account, priority and "+
			"runtime class and the pod's security context are the InferenceService's predictor's, not the runtime's, and are refused here. "+
			"The managed container's probes and `nvidia.com/gpu` come from this resource's attributes.", true),
		"container": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(runtimeContainer),
			MarkdownDescription: "Name of the container in `template.containers` that runs the model server: it gets the GPUs, the probes and the " +
				"model cache. Default `kserve-container`, the container KServe merges an InferenceService's predictor into.",
			Validators: []validator.String{validators.DNSLabel()}},
		"model":            model,
		"gpus_per_replica": shared["gpus_per_replica"],
		"gpu_memory":       gpuMemory,
		"port": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(runtimePort),
			MarkdownDescription: "Port the server listens on; the probes target it. Default `8080`, the port KServe routes a predictor's traffic to.",
			Validators:          []validator.Int64{int64validator.Between(1, 65535)}},

		"kind": schema.StringAttribute{Computed: true, MarkdownDescription: "`ClusterServingRuntime` or `ServingRuntime`.",
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
		"max_concurrency_per_replica": shared["max_concurrency_per_replica"],
	}
	return withServerAttributes(attrs, shared)
}

// serverAttributes are the model deployment's sizing, probe and cache
// attributes that a serving runtime and a preset take as they are (their
// model, GPUs, port and container differ).
var serverAttributes = []string{"reserve_fraction", "overhead_bytes_per_gpu", "load_bytes_per_second", "liveness_path", "readiness_path",
	"model_cache", "fit", "estimated_load_seconds", "startup_failure_threshold"}

// withServerAttributes adds serverAttributes from shared (the model
// deployment's) to attrs.
func withServerAttributes(attrs, shared map[string]schema.Attribute) map[string]schema.Attribute {
	for _, k := range serverAttributes {
		attrs[k] = shared[k]
	}
	return attrs
}
