package serving

import (
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// aiplatform_llm_service_preset: a KServe LLMInferenceServiceConfig, the
// preset platform teams publish for LLMInferenceServices (which name it in
// spec.baseRefs): the model, the parallelism, the vLLM pod (through the
// shared pod template, its main container a model server as the model
// deployment builds it) and the router. Split by verb: this file is the
// schema and model, _plan the checks, _object the object both ways.

// LLMServiceConfigKind is KServe's LLMInferenceServiceConfig (v1alpha2,
// the storage version, so that no conversion webhook is needed to write it).
var LLMServiceConfigKind = catalog.LLMServiceConfigKind

const (
	// presetContainer is the container KServe's published presets run vLLM
	// in, which an LLMInferenceService's template merges into.
	presetContainer = "main"
	presetPort      = 8000
)

type presetModel struct {
	object.NamespacedMeta
	object.LiveChanges
	Model               *presetLLM            `tfsdk:"model"`
	Sizing              *deployModelSpec      `tfsdk:"sizing"`
	Parallelism         *presetParallelism    `tfsdk:"parallelism"`
	Replicas            types.Int64           `tfsdk:"replicas"`
	Template            *podtemplate.Template `tfsdk:"template"`
	Container           types.String          `tfsdk:"container"`
	GPUMemory           types.String          `tfsdk:"gpu_memory"`
	ReserveFraction     types.Float64         `tfsdk:"reserve_fraction"`
	OverheadBytesPerGPU types.Int64           `tfsdk:"overhead_bytes_per_gpu"`
	LoadBytesPerSecond  types.Int64           `tfsdk:"load_bytes_per_second"`
	Port                types.Int64           `tfsdk:"port"`
	LivenessPath        types.String          `tfsdk:"liveness_path"`
	ReadinessPath       types.String          `tfsdk:"readiness_path"`
	ModelCache          *deployCache          `tfsdk:"model_cache"`
	Router              *presetRouter         `tfsdk:"router"`

	GPUsPerPod              types.Int64  `tfsdk:"gpus_per_pod"`
	Fit                     types.String `tfsdk:"fit"`
	MaxConcurrency          types.Int64  `tfsdk:"max_concurrency_per_replica"`
	EstimatedLoadSeconds    types.Int64  `tfsdk:"estimated_load_seconds"`
	StartupFailureThreshold types.Int64  `tfsdk:"startup_failure_threshold"`
}

// presetLLM is spec.model.
type presetLLM struct {
	URI  types.String `tfsdk:"uri"`
	Name types.String `tfsdk:"name"`
}

// presetParallelism is spec.parallelism.
type presetParallelism struct {
	Tensor    types.Int64 `tfsdk:"tensor"`
	Pipeline  types.Int64 `tfsdk:"pipeline"`
	Data      types.Int64 `tfsdk:"data"`
	DataLocal types.Int64 `tfsdk:"data_local"`
	Expert    types.Bool  `tfsdk:"expert"`
}

// presetRouter is spec.router: KServe-managed pieces ({} in the object)
// or references to existing ones.
type presetRouter struct {
	Route             types.Bool     `tfsdk:"route"`
	Gateway           types.Bool     `tfsdk:"gateway"`
	GatewayRefs       []presetRef    `tfsdk:"gateway_refs"`
	Scheduler         types.Bool     `tfsdk:"scheduler"`
	SchedulerReplicas types.Int64    `tfsdk:"scheduler_replicas"`
	RouteRefs         []types.String `tfsdk:"route_refs"`
}

type presetRef struct {
	Name      types.String `tfsdk:"name"`
	Namespace types.String `tfsdk:"namespace"`
}

func (p *presetParallelism) get(v func(*presetParallelism) types.Int64) int64 {
	if p == nil || !object.Known(v(p)) {
		return 1
	}
	return v(p).ValueInt64()
}

// tensor, pipeline and dataLocal are the parallelism's, 1 when unset.
func (m *presetModel) tensor() int64 {
	return m.Parallelism.get(func(p *presetParallelism) types.Int64 { return p.Tensor })
}
func (m *presetModel) pipeline() int64 {
	return m.Parallelism.get(func(p *presetParallelism) types.Int64 { return p.Pipeline })
}
func (m *presetModel) dataLocal() int64 {
	return m.Parallelism.get(func(p *presetParallelism) types.Int64 { return p.DataLocal })
}

// parallelismKnown: every parallelism value is known.
func (m *presetModel) parallelismKnown() bool {
	p := m.Parallelism
	return p == nil || !anyUnknown(p.Tensor, p.Pipeline, p.DataLocal)
}

// server is the preset's vLLM pod as the model deployment's code sees it,
// with gpus GPUs per replica: the pod's GPUs (tensor × data_local) for
// the pod and the node check, the shards of the weights (tensor ×
// pipeline) for the fit rule.
func (m *presetModel) server(gpus int64) *modelDeploymentModel {
	d := &modelDeploymentModel{
		Template: m.Template, Container: m.Container, Model: m.Sizing, GPUsPerReplica: types.Int64Value(gpus), GPUMemory: m.GPUMemory,
		ReserveFraction: m.ReserveFraction, OverheadBytesPerGPU: m.OverheadBytesPerGPU, LoadBytesPerSecond: m.LoadBytesPerSecond,
		Replicas: types.Int64Value(1), AllowScaleToZero: types.BoolValue(false), Port: m.Port, LivenessPath: m.LivenessPath,
		ReadinessPath: m.ReadinessPath, ServicePort: types.Int64Null(), ModelCache: m.ModelCache, QueueName: types.StringNull(),
		WaitForReady: types.BoolValue(false), Timeout: types.StringNull(),
		Fit: m.Fit, MaxConcurrency: m.MaxConcurrency, EstimatedLoadSeconds: m.EstimatedLoadSeconds, StartupFailureThreshold: m.StartupFailureThreshold,
	}
	d.Name, d.Namespace = m.Name, m.Namespace
	if !m.parallelismKnown() {
		d.GPUsPerReplica = types.Int64Unknown()
	}
	return d
}

// NewLLMServicePreset is aiplatform_llm_service_preset.
func NewLLMServicePreset() resource.Resource {
	return object.New[presetModel](object.Spec[presetModel]{
		TypeName: "llm_service_preset",
		Kind:     LLMServiceConfigKind,
		Description: "A KServe `LLMInferenceServiceConfig` (`serving.kserve.io/v1alpha2`): the preset a platform team publishes for " +
			"`LLMInferenceService`s, which name it in `spec.baseRefs` (KServe looks in the service's namespace, then in its own, `kserve`). " +
			"Typed: the model (`model`: URI and served name), the parallelism (tensor, pipeline, data, data-local, expert), the " +
			"replicas, the vLLM pod through the shared pod-template attributes (`template`; its container `main` — the container KServe's " +
			"published presets run vLLM in — gets tensor × data-local GPUs, the model cache mounted read-only and three probes), the router " +
			"(a KServe-managed HTTPRoute, Gateway and endpoint picker, or references to existing ones). It names no base presets itself: KServe v0.20's webhook refuses `spec.baseRefs` in a preset (\"support for recursive refs has been disabled\"); services list this preset beside KServe's own in their `baseRefs`.\n\n" +
			"When `sizing` is given the plan sizes the model with the same rules as `aiplatform_model_deployment` and " +
			"`data.aiplatform_inference_sizing`, the weights and the KV cache sharded over tensor × pipeline GPUs: weights ÷ (tensor × pipeline) + " +
			"the KV cache of one request at `context_length` ÷ (tensor × pipeline) + `overhead_bytes_per_gpu` must fit one GPU after `reserve_fraction`; " +
			"`parallelism.tensor` must divide the attention heads and divide or be a multiple of the KV heads; and one pod's tensor × data-local GPUs must " +
			"not exceed the allocatable GPUs of the live nodes matching `template.node_selector`. Probes as `aiplatform_model_deployment`'s: a startup " +
			"probe sized to the load time, liveness on the server's own `liveness_path` only after it, readiness separate.",
		Attributes:    presetAttributes(),
		Fields:        presetFields,
		Read:          readPreset,
		Validate:      validatePreset,
		ModifyPlan:    planPreset,
		ImportReport:  presetImportReport,
		ImportCarrier: "template.pod_template",
	})
}

func presetAttributes() map[string]schema.Attribute {
	shared := modelDeploymentAttributes()
	sz := shared["model"].(schema.SingleNestedAttribute)
	sz.Required, sz.Optional = false, true
	sz.MarkdownDescription = "The model's size and shape, for the fit and tensor-parallel rules and the startup probe (not written to the " +
		"preset's spec; recorded in an annotation, so an import reads it back). Unset: no sizing, and a startup probe of 120 s."
	gpuMemory := shared["gpu_memory"].(schema.StringAttribute)
	gpuMemory.MarkdownDescription = "One GPU's memory as a quantity (`\"80Gi\"`). Unset: the smallest `nvidia.com/gpu.memory` label (MiB) of the live " +
		"nodes matching `template.node_selector`, read at plan time when `sizing` is set (null without `sizing`)."
	posInt := func(desc string) schema.Int64Attribute {
		return schema.Int64Attribute{Optional: true, MarkdownDescription: desc, Validators: []validator.Int64{int64validator.AtLeast(1)}}
	}
	tmpl := podtemplate.Attribute("The vLLM pod of the services built on this preset (a full pod template: KServe merges it with the service's "+
		"own and its other base presets'). The container `container` (default `main`) gets the GPUs, the probes and the model cache; its "+
		"probes and `nvidia.com/gpu` must not be given here.", false)
	return withServerAttributes(map[string]schema.Attribute{
		"model": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "`spec.model`: what the services serve.",
			Attributes: map[string]schema.Attribute{
				"uri": schema.StringAttribute{Optional: true, MarkdownDescription: "Where the weights are: `hf://org/model`, `pvc://claim/path`, `s3://…`, `oci://…`.",
					Validators: []validator.String{stringvalidator.RegexMatches(modelURI, "must be a URI with a scheme, e.g. hf://meta-llama/Llama-3.1-8B-Instruct")}},
				"name": schema.StringAttribute{Optional: true, MarkdownDescription: "The served model name clients ask for (`--served-model-name`)."},
			}},
		"sizing": sz,
		"parallelism": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "`spec.parallelism`.",
			Attributes: map[string]schema.Attribute{
				"tensor":     posInt("Tensor parallelism: GPUs one model copy is sharded over within a pod; must divide the attention heads."),
				"pipeline":   posInt("Pipeline parallelism: stages over pods (nodes) of one replica; the fit rule shards the weights over tensor × pipeline."),
				"data":       posInt("Data parallelism: model copies across the replica's pods."),
				"data_local": posInt("Data-parallel ranks per pod: the pod's GPUs are tensor × data_local."),
				"expert":     schema.BoolAttribute{Optional: true, MarkdownDescription: "Expert parallelism for mixture-of-experts models."},
			}},
		"replicas": schema.Int64Attribute{Optional: true, MarkdownDescription: "`spec.replicas`: replicas of the services built on this preset.",
			Validators: []validator.Int64{int64validator.AtLeast(0)}},
		"template": tmpl,
		"container": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(presetContainer),
			MarkdownDescription: "Name of the container in `template.containers` that runs the model server. Default `main`, KServe's.",
			Validators:          []validator.String{validators.DNSLabel()}},
		"gpu_memory": gpuMemory,
		"port": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(presetPort),
			MarkdownDescription: "Port vLLM listens on; the probes target it. Default `8000`, KServe's presets'.",
			Validators:          []validator.Int64{int64validator.Between(1, 65535)}},
		"router": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "`spec.router`: how requests reach the pods.",
			Attributes: map[string]schema.Attribute{
				"route": schema.BoolAttribute{Optional: true, MarkdownDescription: "KServe creates and manages the HTTPRoute (`route: {}`)."},
				"route_refs": schema.ListAttribute{ElementType: types.StringType, Optional: true,
					MarkdownDescription: "Existing HTTPRoutes in the service's namespace to use instead.",
					Validators:          []validator.List{listvalidator.ValueStringsAre(validators.DNSSubdomain())}},
				"gateway": schema.BoolAttribute{Optional: true, MarkdownDescription: "Attach to KServe's configured ingress Gateway (`gateway: {}`)."},
				"gateway_refs": schema.ListNestedAttribute{Optional: true, MarkdownDescription: "Gateways to attach to instead.",
					NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
						"name":      schema.StringAttribute{Required: true, Validators: []validator.String{validators.DNSSubdomain()}, MarkdownDescription: "Gateway name."},
						"namespace": schema.StringAttribute{Optional: true, Validators: []validator.String{validators.DNSLabel()}, MarkdownDescription: "Its namespace; the service's when unset."},
					}}},
				"scheduler": schema.BoolAttribute{Optional: true,
					MarkdownDescription: "KServe runs the endpoint picker and its InferencePool (`scheduler: {}`): routing by KV-cache and queue state."},
				"scheduler_replicas": schema.Int64Attribute{Optional: true, MarkdownDescription: "Replicas of the endpoint picker; needs `scheduler`.",
					Validators: []validator.Int64{int64validator.AtLeast(1)}},
			}},

		"gpus_per_pod": schema.Int64Attribute{Computed: true, MarkdownDescription: "GPUs of the `main` container: tensor × data_local (1 each when unset)."},
		"max_concurrency_per_replica": schema.Int64Attribute{Computed: true,
			MarkdownDescription: "Requests at full `context_length` one model copy holds at once: ⌊(usable − weights ÷ shards − overhead) × shards ÷ (kv per token × context length)⌋, shards = tensor × pipeline."},
	}, shared)
}
