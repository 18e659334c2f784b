package serving

import (
	"time"

	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/float64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/modelcache"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/sizing"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// aiplatform_model_deployment: the single-node serving path. A Deployment
// (and a Service in front of it) for a model whose replica fits one node,
// sized by internal/sizing's fit and tensor-parallel rules at plan time.
// Split by verb: this file is the schema and model, _plan the checks,
// _object the Deployment both ways, _wait the Service and readiness.

var deploymentKind = kube.Kind{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}

var serviceKind = kube.Kind{Version: "v1", Resource: "services", Kind: "Service", Namespaced: true}

const (
	// deploySelectorLabel selects the Deployment's pods (and the Service's).
	deploySelectorLabel = "aiplatform.io/model-deployment"
	// deploySizingAnnotation records the sizing inputs that are not part of
	// a Deployment, so an import gets them back.
	deploySizingAnnotation = "aiplatform.io/model-sizing"
	// deployDefaultContainer is the managed container's default name.
	deployDefaultContainer = "server"
	deployDefaultTimeout   = "20m"
	deployDefaultWait      = 20 * time.Minute
	// Probe timings other than the startup threshold (which comes from the
	// load time): liveness restarts a hung server after 3 × 10 s; readiness
	// takes a replica out of the Service after 3 × 5 s.
	livenessPeriod, livenessTimeout, livenessFailures    = 10, 5, 3
	readinessPeriod, readinessTimeout, readinessFailures = 5, 5, 3
	startupPeriod                                        = 10
)

var absHTTPPath = regexp.MustCompile(`^/`)

type modelDeploymentModel struct {
	object.NamespacedMeta
	object.LiveChanges
	Template            *podtemplate.Template `tfsdk:"template"`
	Container           types.String          `tfsdk:"container"`
	Model               *deployModelSpec      `tfsdk:"model"`
	GPUsPerReplica      types.Int64           `tfsdk:"gpus_per_replica"`
	GPUMemory           types.String          `tfsdk:"gpu_memory"`
	ReserveFraction     types.Float64         `tfsdk:"reserve_fraction"`
	OverheadBytesPerGPU types.Int64           `tfsdk:"overhead_bytes_per_gpu"`
	LoadBytesPerSecond  types.Int64           `tfsdk:"load_bytes_per_second"`
	Replicas            types.Int64           `tfsdk:"replicas"`
	AllowScaleToZero    types.Bool            `tfsdk:"allow_scale_to_zero"`
	Port                types.Int64           `tfsdk:"port"`
	LivenessPath        types.String          `tfsdk:"liveness_path"`
	ReadinessPath       types.String          `tfsdk:"readiness_path"`
	ServicePort         types.Int64           `tfsdk:"service_port"`
	ModelCache          *deployCache          `tfsdk:"model_cache"`
	QueueName           types.String          `tfsdk:"queue_name"`
	WaitForReady        types.Bool            `tfsdk:"wait_for_ready"`
	Timeout             types.String          `tfsdk:"timeout"`

	Fit                     types.String `tfsdk:"fit"`
	MaxConcurrency          types.Int64  `tfsdk:"max_concurrency_per_replica"`
	EstimatedLoadSeconds    types.Int64  `tfsdk:"estimated_load_seconds"`
	StartupFailureThreshold types.Int64  `tfsdk:"startup_failure_threshold"`
	ServiceName             types.String `tfsdk:"service_name"`
	Endpoint                types.String `tfsdk:"endpoint"`
}

// deployModelSpec describes the model for the fit and tensor-parallel rules.
type deployModelSpec struct {
	ParamsBillion        types.Float64 `tfsdk:"params_billion" json:"paramsBillion,omitempty"`
	DType                types.String  `tfsdk:"dtype" json:"dtype,omitempty"`
	ModelBytes           types.Int64   `tfsdk:"model_bytes" json:"modelBytes,omitempty"`
	ContextLength        types.Int64   `tfsdk:"context_length" json:"contextLength"`
	KVCacheBytesPerToken types.Int64   `tfsdk:"kv_cache_bytes_per_token" json:"kvCacheBytesPerToken"`
	AttentionHeads       types.Int64   `tfsdk:"attention_heads" json:"attentionHeads,omitempty"`
	KVHeads              types.Int64   `tfsdk:"kv_heads" json:"kvHeads,omitempty"`
}

// deployCache is a warmed aiplatform_model_cache, mounted read-only.
type deployCache struct {
	Mode      types.String `tfsdk:"mode"`
	ClaimName types.String `tfsdk:"claim_name"`
	HostPath  types.String `tfsdk:"host_path"`
	SubPath   types.String `tfsdk:"sub_path"`
	MountPath types.String `tfsdk:"mount_path"`
}

func (c *deployCache) cache() modelcache.Cache {
	return modelcache.Cache{Mode: c.Mode.ValueString(), ClaimName: c.ClaimName.ValueString(), HostPath: c.HostPath.ValueString(),
		SubPath: c.SubPath.ValueString(), MountPath: c.MountPath.ValueString()}
}

// NewModelDeployment is aiplatform_model_deployment.
func NewModelDeployment() resource.Resource {
	return object.New[modelDeploymentModel](object.Spec[modelDeploymentModel]{
		TypeName: "model_deployment",
		Kind:     deploymentKind,
		Description: "The single-node serving path: an `apps/v1` Deployment of a model server (vLLM, SGLang, …) whose replica fits " +
			"one node, and a ClusterIP Service of the same name in front of it.\n\n" +
			"The plan sizes the model with the same rules as `data.aiplatform_inference_sizing` and refuses, with the numbers, " +
			"a replica that cannot serve: weights ÷ `gpus_per_replica` + the KV cache of one request at `context_length` ÷ " +
			"`gpus_per_replica` + `overhead_bytes_per_gpu` must fit one GPU's memory after `reserve_fraction`; `gpus_per_replica` " +
			"(the tensor parallelism) must divide the model's attention heads when given; and it must not exceed the allocatable GPUs " +
			"of the live nodes matching `template.node_selector`.\n\n" +
			"The managed container (`container`, default `server`) gets the GPUs, the model cache mounted read-only, and three probes: " +
			"a startup probe on `liveness_path` whose failure threshold covers loading the weights (weights ÷ `load_bytes_per_second`, " +
			"plus 60 s, times 2, at least 120 s); a liveness probe on the server's own `liveness_path` that Kubernetes holds until the " +
			"startup probe has passed; and a separate readiness probe on `readiness_path`. `replicas = 0` needs `allow_scale_to_zero`.",
		Attributes: modelDeploymentAttributes(),
		Fields:     modelDeploymentFields,
		Read:       readModelDeployment,
		Validate:   validateModelDeployment,
		ModifyPlan: withPlanned(planModelDeployment, planDeploymentPods),
		AfterApply: afterModelDeployment,
		// The wait for readiness: timeouts.create/update, the deprecated
		// timeout filling in.
		ApplyTimeout:  deployDefaultWait,
		LegacyTimeout: func(m *modelDeploymentModel) types.String { return m.Timeout },
	})
}

func deployInt(desc string, v ...validator.Int64) schema.Int64Attribute {
	return schema.Int64Attribute{Optional: true, MarkdownDescription: desc, Validators: v}
}

func modelDeploymentAttributes() map[string]schema.Attribute {
	tmpl := podtemplate.Attribute("The pods: containers (one of them the managed `container`), volumes, node selector, tolerations, … "+
		"The managed container's probes and `nvidia.com/gpu` are set from this resource's attributes and must not be given here.", true)
	return map[string]schema.Attribute{
		"template": tmpl,
		"container": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(deployDefaultContainer),
			MarkdownDescription: "Name of the container in `template.containers` that runs the model server: it gets the GPUs, the probes and the " +
				"model cache. Default `server`. An import adopts the live Deployment's container of that name, or its only container.",
			Validators: []validator.String{validators.DNSLabel()}},
		"model": schema.SingleNestedAttribute{Required: true,
			MarkdownDescription: "The model, for the fit and tensor-parallel rules. Recorded in an annotation of the Deployment, so an import reads it back.",
			Attributes: map[string]schema.Attribute{
				"params_billion": schema.Float64Attribute{Optional: true, MarkdownDescription: "Parameters in billions; with `dtype`. Conflicts with `model_bytes`."},
				"dtype": schema.StringAttribute{Optional: true, MarkdownDescription: "Type of the weights: `fp32`, `fp16`, `bf16`, `fp8`, `int8`, `int4`.",
					Validators: []validator.String{stringvalidator.OneOf(sizing.DTypes()...)}},
				"model_bytes": schema.Int64Attribute{Optional: true, MarkdownDescription: "Size of the weights in bytes, instead of `params_billion` and `dtype`."},
				"context_length": schema.Int64Attribute{Required: true,
					MarkdownDescription: "Tokens of one request at most (the server's `--max-model-len`). The replica must hold one request of this length."},
				"kv_cache_bytes_per_token": schema.Int64Attribute{Required: true,
					MarkdownDescription: "KV cache per token: 2 × layers × KV heads × head dimension × bytes per element (Llama 3 8B in bf16: 131072)."},
				"attention_heads": schema.Int64Attribute{Optional: true, MarkdownDescription: "Attention heads: `gpus_per_replica` must divide them."},
				"kv_heads":        schema.Int64Attribute{Optional: true, MarkdownDescription: "KV heads: `gpus_per_replica` must divide them or be a multiple of them."},
			}},
		"gpus_per_replica": schema.Int64Attribute{Required: true,
			MarkdownDescription: "GPUs of each pod (`nvidia.com/gpu` of the managed container), which is also its tensor parallelism; pass it to the server " +
				"(e.g. `--tensor-parallel-size`). At most the GPUs of one node.",
			Validators: []validator.Int64{int64validator.Between(1, sizing.MaxGPUs)}},
		"gpu_memory": schema.StringAttribute{Optional: true, Computed: true,
			MarkdownDescription: "One GPU's memory as a quantity (`\"80Gi\"`). Unset: the smallest `nvidia.com/gpu.memory` label (MiB) of the live nodes matching " +
				"`template.node_selector`, read at plan time.",
			Validators: []validator.String{validators.Quantity()}},
		"reserve_fraction": schema.Float64Attribute{Optional: true, Computed: true, Default: float64default.StaticFloat64(sizing.DefaultReserveFraction),
			MarkdownDescription: "Share of each GPU's memory the server does not use (vLLM's `--gpu-memory-utilization` is 1 − this). Default `0.1`."},
		"overhead_bytes_per_gpu": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(sizing.DefaultOverheadBytes),
			MarkdownDescription: "Memory each GPU keeps beside weights and KV cache (CUDA context, activations, CUDA graphs). Default 1 GiB.",
			Validators:          []validator.Int64{int64validator.AtLeast(0)}},
		"load_bytes_per_second": deployInt("Assumed read throughput while a replica loads its weights, for the startup probe. Unset: 1 GiB/s from a node-local "+
			"model cache, else 200 MiB/s (a shared volume or a download).", int64validator.AtLeast(1<<20)),
		"replicas": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(1),
			MarkdownDescription: "Pods. Default `1`. `0` only with `allow_scale_to_zero`.", Validators: []validator.Int64{int64validator.AtLeast(0)}},
		"allow_scale_to_zero": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			MarkdownDescription: "Accept `replicas = 0`: the first request after scaling up waits for a cold start (the plan warns with the estimated load time). Default `false`."},
		"port": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(8000),
			MarkdownDescription: "Port the server listens on; the probes and the Service target it. Default `8000` (vLLM's).",
			Validators:          []validator.Int64{int64validator.Between(1, 65535)}},
		"liveness_path": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("/health"),
			MarkdownDescription: "HTTP path of the server's own health, for the startup and liveness probes. Default `/health` (vLLM, SGLang). " +
				"Liveness must not depend on anything downstream (a failing database would restart every replica): a path with a query, " +
				"another host, or a segment such as `ready`, `readyz`, `readiness`, `deps`, `dependencies`, `upstream` or `downstream` is refused; use `readiness_path` for those.",
			Validators: []validator.String{stringvalidator.RegexMatches(absHTTPPath, "must be an absolute path")}},
		"readiness_path": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("/v1/models"),
			MarkdownDescription: "HTTP path of the readiness probe: a replica gets traffic only while it answers. Default `/v1/models` (the OpenAI-compatible API is up).",
			Validators:          []validator.String{stringvalidator.RegexMatches(absHTTPPath, "must be an absolute path")}},
		"service_port": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(80),
			MarkdownDescription: "Port of the Service (targets `port`). Default `80`.", Validators: []validator.Int64{int64validator.Between(1, 65535)}},
		"model_cache": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "A warmed `aiplatform_model_cache` mounted read-only at `mount_path` in the managed container: " +
				"`{ mode = c.mode, claim_name = c.claim_name, host_path = c.host_path, sub_path = c.sub_path, mount_path = c.mount_path }`.",
			Attributes: map[string]schema.Attribute{
				"mode": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(modelcache.ModePVC),
					MarkdownDescription: "`pvc` (default) or `node_local`.",
					Validators:          []validator.String{stringvalidator.OneOf(modelcache.ModePVC, modelcache.ModeNodeLocal)}},
				"claim_name": schema.StringAttribute{Optional: true, MarkdownDescription: "The cache's PersistentVolumeClaim (mode `pvc`)."},
				"host_path":  schema.StringAttribute{Optional: true, MarkdownDescription: "The cache's directory on each node (mode `node_local`)."},
				"sub_path":   schema.StringAttribute{Required: true, MarkdownDescription: "The warmed revision's directory in the cache."},
				"mount_path": schema.StringAttribute{Required: true, MarkdownDescription: "Where the weights appear in the container.",
					Validators: []validator.String{stringvalidator.RegexMatches(absHTTPPath, "must be an absolute path")}},
			}},
		"queue_name": schema.StringAttribute{Optional: true,
			MarkdownDescription: "Kueue LocalQueue: sets the `kueue.x-k8s.io/queue-name` label on the Deployment and its pods (Kueue's `deployment` integration admits each pod).",
			Validators:          []validator.String{validators.LabelValue(), stringvalidator.LengthAtLeast(1)}},
		"wait_for_ready": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
			MarkdownDescription: "Wait after create and update until the Deployment is available with every replica updated. Default `true`."},
		"timeout": object.LegacyTimeout(deployDefaultTimeout, "the wait for readiness after a create or update"),

		"fit": schema.StringAttribute{Computed: true, MarkdownDescription: "The fit rule's arithmetic, in words."},
		"max_concurrency_per_replica": schema.Int64Attribute{Computed: true,
			MarkdownDescription: "Requests at full `context_length` one replica holds at once: ⌊(usable − weights ÷ tp − overhead) × tp ÷ (kv per token × context length)⌋."},
		"estimated_load_seconds": schema.Int64Attribute{Computed: true, MarkdownDescription: "Weights ÷ `load_bytes_per_second`, rounded up."},
		"startup_failure_threshold": schema.Int64Attribute{Computed: true,
			MarkdownDescription: "Failure threshold of the startup probe (10 s period): ⌈(load + 60 s) × 2 ÷ 10⌉, at least 12."},
		"service_name": schema.StringAttribute{Computed: true, MarkdownDescription: "The Service, named as the Deployment."},
		"endpoint":     schema.StringAttribute{Computed: true, MarkdownDescription: "`http://<service>.<namespace>.svc:<service_port>`."},
	}
}
