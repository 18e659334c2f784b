package serving

import (
	"reflect"
	"regexp"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/float64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/sizing"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// lwsKind is a LeaderWorkerSet (sigs.k8s.io/lws).
var lwsKind = catalog.LWSKind

const (
	// QueueLabel puts a workload in a Kueue LocalQueue.
	QueueLabel = catalog.KueueQueueLabel
	// ServingAnnotation records a group's serving block on its object, so
	// that import restores it and refresh reads it from the cluster.
	ServingAnnotation = "serving.aiplatform.terraform.io/sizing"
	// Defaults of the serving block.
	DefaultServingPort = 8000
	DefaultHealthPath  = "/health"
	// DefaultReadinessPath is the readiness probe's: the OpenAI-compatible
	// API of vLLM and SGLang answers once the model is loaded.
	DefaultReadinessPath = "/v1/models"
)

type lwsGroupModel struct {
	object.NamespacedMeta
	object.LiveChanges
	Replicas         types.Int64       `tfsdk:"replicas"`
	Size             types.Int64       `tfsdk:"size"`
	Leader           *podTemplateModel `tfsdk:"leader"`
	Worker           *podTemplateModel `tfsdk:"worker"`
	StartupPolicy    types.String      `tfsdk:"startup_policy"`
	Rollout          *rolloutModel     `tfsdk:"rollout"`
	RestartPolicy    types.String      `tfsdk:"restart_policy"`
	QueueName        types.String      `tfsdk:"queue_name"`
	ModelCache       *modelCacheModel  `tfsdk:"model_cache"`
	Serving          *servingModel     `tfsdk:"serving"`
	AllowScaleToZero types.Bool        `tfsdk:"allow_scale_to_zero"`
	MaxConcurrency   types.Int64       `tfsdk:"max_concurrency"`
	GPUsTotal        types.Int64       `tfsdk:"gpus_total"`
	WaitForReady     types.Bool        `tfsdk:"wait_for_ready"`
}

type rolloutModel struct {
	MaxUnavailable types.String `tfsdk:"max_unavailable"`
	MaxSurge       types.String `tfsdk:"max_surge"`
}

type servingModel struct {
	ModelBytes             types.Int64   `tfsdk:"model_bytes" json:"-"`
	ParamsBillion          types.Float64 `tfsdk:"params_billion"`
	DType                  types.String  `tfsdk:"dtype"`
	KVCacheBytesPerRequest types.Int64   `tfsdk:"kv_cache_bytes_per_request"`
	KVCacheBytesPerToken   types.Int64   `tfsdk:"kv_cache_bytes_per_token"`
	ContextLength          types.Int64   `tfsdk:"context_length"`
	AttentionHeads         types.Int64   `tfsdk:"attention_heads"`
	KVHeads                types.Int64   `tfsdk:"kv_heads"`
	OverheadBytesPerGPU    types.Int64   `tfsdk:"overhead_bytes_per_gpu"`
	GPUMemory              types.String  `tfsdk:"gpu_memory"`
	ReserveFraction        types.Float64 `tfsdk:"reserve_fraction"`
	TensorParallel         types.Int64   `tfsdk:"tensor_parallel"`
	Port                   types.Int64   `tfsdk:"port"`
	HealthPath             types.String  `tfsdk:"health_path"`
	ReadinessPath          types.String  `tfsdk:"readiness_path"`
}

var (
	rolloutTypes   = map[string]attr.Type{"max_unavailable": types.StringType, "max_surge": types.StringType}
	rolloutDefault = types.ObjectValueMust(rolloutTypes, map[string]attr.Value{
		"max_unavailable": types.StringValue("1"), "max_surge": types.StringValue("0"),
	})
	intOrPercent = regexp.MustCompile(`^[0-9]+%?$`)
)

// NewLWSGroup is aiplatform_lws_group.
func NewLWSGroup() resource.Resource {
	return object.New[lwsGroupModel](object.Spec[lwsGroupModel]{
		TypeName: "lws_group",
		Kind:     lwsKind,
		Description: "A LeaderWorkerSet (`leaderworkerset.x-k8s.io/v1`): `replicas` groups of `size` pods — one leader " +
			"and `size − 1` workers — created, scaled, restarted and rolled out as units, which is what a model " +
			"sharded over several nodes needs. With `serving`, the plan checks that the weights, the KV cache of one request and the " +
			"per-GPU overhead fit the GPUs, and the tensor parallelism against the model's heads, by the same rules as " +
			"`data.aiplatform_inference_sizing` (see the guide *Inference sizing*); the leader's model server gets a startup probe sized to the time it " +
			"takes to read the weights, a liveness probe on the server's own health path that Kubernetes starts only after the startup " +
			"probe has passed, and a separate readiness probe. The workers get no probes from `serving` — a Ray or vLLM worker serves no HTTP, and " +
			"probes on the server's port would kill it and, with `RecreateGroupOnPodRestart`, restart its group — only those their own containers " +
			"set (with a `leader` block). Without a `leader` block the leader runs the worker template, written out as the LeaderWorkerSet's " +
			"`leaderTemplate` with the probes added. `replicas = 0` needs `allow_scale_to_zero`.\n\n" +
			"`leader` and `worker` are pod templates of the provider's shared model: named containers (the model server first, sidecars after it), " +
			"requests apart from limits, ports, env from Secrets and ConfigMaps, volumes and mounts, init and sidecar containers, and `pod_template` " +
			"for anything else a `PodTemplateSpec` can say; `image`, `gpus`, `cpu` and `memory` are a shorthand for a pod of one container. " +
			"Adopting an existing LeaderWorkerSet (an `import` block and `terraform plan -generate-config-out`) keeps its containers' names, " +
			"puts what no typed attribute says in `pod_template`, and warns with the paths of what the configuration carries there and of what it " +
			"cannot carry at all (the object's own labels, a subgroup policy), which an apply leaves to the manager that set it.",
		Attributes: map[string]schema.Attribute{
			"replicas": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(1),
				MarkdownDescription: "Number of groups. Default 1. `0` needs `allow_scale_to_zero`.", Validators: []validator.Int64{int64validator.Between(0, 10000)}},
			"allow_scale_to_zero": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Accept `replicas = 0`: no group serves, and the first request after scaling up waits for a cold start " +
					"(the plan warns with the estimated load time of the weights). Default `false`. Not stored on the object: an import reads `true` " +
					"when the LeaderWorkerSet has no replicas."},
			"size": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(1),
				MarkdownDescription: "Pods per group, the leader included: a replica spanning two nodes has size 2. Default 1.",
				Validators:          []validator.Int64{int64validator.Between(1, 1024)}},
			"leader": templateAttribute("The leader pod of each group (index 0); the worker template when unset.", false),
			"worker": templateAttribute("The worker pods of each group (indexes 1 … size − 1), and the leader's when `leader` is unset.", true),
			"startup_policy": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("LeaderCreated"),
				MarkdownDescription: "`LeaderCreated` (default: workers start with the leader) or `LeaderReady` (workers start once the leader is ready).",
				Validators:          []validator.String{stringvalidator.OneOf("LeaderCreated", "LeaderReady")}},
			"rollout": schema.SingleNestedAttribute{Optional: true, Computed: true, Default: objectdefault.StaticValue(rolloutDefault),
				MarkdownDescription: "Rolling update of whole groups when a template changes.",
				Attributes: map[string]schema.Attribute{
					"max_unavailable": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("1"),
						MarkdownDescription: "Groups that may be unavailable during an update: a number or a percentage (`\"25%\"`). Default `\"1\"`.",
						Validators:          []validator.String{stringvalidator.RegexMatches(intOrPercent, "must be a number or a percentage such as \"25%\"")}},
					"max_surge": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("0"),
						MarkdownDescription: "Extra groups created during an update: a number or a percentage. Default `\"0\"`.",
						Validators:          []validator.String{stringvalidator.RegexMatches(intOrPercent, "must be a number or a percentage such as \"25%\"")}},
				},
			},
			"restart_policy": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("RecreateGroupOnPodRestart"),
				MarkdownDescription: "`RecreateGroupOnPodRestart` (default: a failed pod restarts its whole group, as sharded serving needs) or `None`.",
				Validators:          []validator.String{stringvalidator.OneOf("RecreateGroupOnPodRestart", "None")}},
			"queue_name": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Kueue LocalQueue of the groups (label `" + QueueLabel + "`): Kueue admits each group as one workload.",
				Validators:          []validator.String{validators.DNSSubdomain()}},
			"wait_for_ready": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "Wait after create and update until the LWS controller reports every group Ready and on the current " +
					"template (`timeouts.create` / `timeouts.update`, default 10 minutes), logging progress at INFO. Default `true`. " +
					"Never waits with `replicas = 0` or with `queue_name` (Kueue may hold the groups until it admits them). Not stored on the object."},
			"model_cache": modelCacheAttribute(),
			"serving":     servingAttribute(),
			"max_concurrency": schema.Int64Attribute{Computed: true,
				MarkdownDescription: "Requests at the configured context length all groups hold at once: `replicas` × " +
					"⌊(usable − ⌈weights ÷ `tensor_parallel`⌉ − overhead) × `tensor_parallel` ÷ one request's KV cache⌋, usable being " +
					"⌊`gpu_memory` × (1 − `reserve_fraction`)⌋ per GPU. At least `replicas` when the plan passes. Null without a KV cache size."},
			"gpus_total": schema.Int64Attribute{Computed: true,
				MarkdownDescription: "GPUs of all groups: `replicas` × (leader GPUs + (`size` − 1) × worker GPUs)."},
		},
		Fields:       lwsFields,
		Read:         readLWS,
		Validate:     validateLWS,
		ModifyPlan:   withPlanned(planLWS, planLWSPods),
		AfterApply:   waitLWS,
		ApplyTimeout: lwsWaitTimeout,
		ImportReport: importReport,
	})
}

func servingAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "The model the groups serve. The plan refuses a group that does not fit: " +
			"⌈weights ÷ `tensor_parallel`⌉ + ⌈one request's KV cache ÷ `tensor_parallel`⌉ + `overhead_bytes_per_gpu` must not exceed " +
			"⌊`gpu_memory` × (1 − `reserve_fraction`)⌋, so that a group serves at least one request at the configured context length; " +
			"it refuses a `tensor_parallel` that exceeds the group's GPUs or (with `attention_heads`/`kv_heads`) does not divide the heads " +
			"as vLLM and SGLang require, and pods that need more GPUs than a node of their pool has. " +
			"The leader's model server (the worker template's when `leader` is unset) gets three probes: a startup probe on " +
			"`port`/`health_path` that allows (weights ÷ read throughput + 60 s) × 2 to start; a liveness probe on the same path " +
			"(every 10 s, restart after 3 failures), which Kubernetes runs only once the startup probe has passed, so it never fires " +
			"while the weights load; and a readiness probe on `readiness_path` (every 5 s). Workers get none.",
		Attributes: map[string]schema.Attribute{
			"model_bytes": schema.Int64Attribute{Optional: true, MarkdownDescription: "Size of the weights in bytes, instead of `params_billion` and `dtype`."},
			"params_billion": schema.Float64Attribute{Optional: true,
				MarkdownDescription: "Parameters in billions; with `dtype`."},
			"dtype": schema.StringAttribute{Optional: true,
				MarkdownDescription: "`fp32`, `fp16`, `bf16`, `fp8`, `int8` or `int4`.", Validators: []validator.String{stringvalidator.OneOf(sizing.DTypes()...)}},
			"kv_cache_bytes_per_request": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "KV cache of one request at the context length served, in bytes; or `kv_cache_bytes_per_token` and `context_length`. " +
					"Without either, only the weights and the overhead are fitted and `max_concurrency` is null.",
				Validators: []validator.Int64{int64validator.AtLeast(1)}},
			"kv_cache_bytes_per_token": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "KV cache per token (2 × layers × KV heads × head dim × bytes per element); one request's is this × `context_length`."},
			"context_length": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "Tokens of one request (the server's `--max-model-len`), with `kv_cache_bytes_per_token`."},
			"attention_heads": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "The model's attention heads: `tensor_parallel` must divide them."},
			"kv_heads": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "The model's KV heads: `tensor_parallel` must divide them or be a multiple of them."},
			"overhead_bytes_per_gpu": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "Memory per GPU beside weights and KV cache (CUDA context, activations, CUDA graphs). Unset: 1 GiB (1073741824)."},
			"gpu_memory": schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Memory of one GPU (`\"80Gi\"` = 80 × 2^30 bytes, `\"80G\"` = 80 × 10^9). Default: the smallest " +
					"`nvidia.com/gpu.memory` label (MiB, as NVIDIA's GPU feature discovery sets it) of the live nodes matching the GPU pods' `node_selector`, as `\"<MiB>Mi\"`."},
			"reserve_fraction": schema.Float64Attribute{Optional: true, Computed: true, Default: float64default.StaticFloat64(sizing.DefaultReserveFraction),
				MarkdownDescription: "Share of each GPU's memory kept for the framework, in [0, 1). Default `0.1`."},
			"tensor_parallel": schema.Int64Attribute{Optional: true, Computed: true,
				MarkdownDescription: "GPUs the weights are sharded over. Default: every GPU of a group.", Validators: []validator.Int64{int64validator.AtLeast(1)}},
			"port": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(DefaultServingPort),
				MarkdownDescription: "Port of the model server's health endpoint. Default 8000.", Validators: []validator.Int64{int64validator.Between(1, 65535)}},
			"health_path": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(DefaultHealthPath),
				MarkdownDescription: "HTTP path of the server's own health, which the startup and liveness probes poll. Default `/health` (vLLM, SGLang). " +
					"Liveness must not depend on anything downstream (a failing dependency would restart every group at once): a path with a query, " +
					"another host, or a segment such as `ready`, `readyz`, `readiness`, `deps`, `dependencies`, `upstream` or `downstream` is refused; " +
					"use `readiness_path` for those.",
				Validators: []validator.String{stringvalidator.RegexMatches(absPath, "must start with /")}},
			"readiness_path": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(DefaultReadinessPath),
				MarkdownDescription: "HTTP path of the readiness probe: a leader gets traffic only while it answers. Default `/v1/models`.",
				Validators:          []validator.String{stringvalidator.RegexMatches(absPath, "must start with /")}},
		},
	}
}

// leaderTemplate is the template the leader runs: leader, else worker.
func (m *lwsGroupModel) leaderTemplate() *podTemplateModel {
	if m.Leader != nil {
		return m.Leader
	}
	return m.Worker
}

// groupGPUs is the GPUs of one group; ok is false while a count is unknown.
func (m *lwsGroupModel) groupGPUs() (int64, bool) {
	if m.Worker == nil || m.Size.IsUnknown() || !m.Worker.gpusKnown() || !m.Leader.gpusKnown() {
		return 0, false
	}
	size := int64(1)
	if object.Known(m.Size) {
		size = m.Size.ValueInt64()
	}
	return m.leaderTemplate().gpus() + (size-1)*m.Worker.gpus(), true
}

func lwsFields(m *lwsGroupModel) map[string]any {
	var probes map[string]any
	if m.Serving != nil {
		probes = serverProbes(m)
	}
	tmpl := map[string]any{"size": m.Size.ValueInt64()}
	object.Put(tmpl, "restartPolicy", m.RestartPolicy)
	// Only the leader's model server gets the serving probes: a worker (a
	// Ray or vLLM worker process) serves no HTTP, so probes on the server's
	// port would kill it after the startup budget, and with
	// RecreateGroupOnPodRestart restart its whole group. Without a leader
	// block the leader runs the worker template; with serving, it is written
	// out as the leader's, with the probes, and the workers' stays bare.
	switch {
	case m.Leader != nil:
		tmpl["leaderTemplate"] = templateOut(m.Leader, m.ModelCache, probes)
		tmpl["workerTemplate"] = templateOut(m.Worker, m.ModelCache, nil)
	case m.Serving != nil:
		tmpl["leaderTemplate"] = templateOut(m.Worker, m.ModelCache, probes)
		tmpl["workerTemplate"] = templateOut(m.Worker, m.ModelCache, nil)
	default:
		tmpl["workerTemplate"] = templateOut(m.Worker, m.ModelCache, nil)
	}
	spec := map[string]any{"replicas": m.Replicas.ValueInt64(), "leaderWorkerTemplate": tmpl}
	object.Put(spec, "startupPolicy", m.StartupPolicy)
	if r := m.Rollout; r != nil {
		cfg := map[string]any{}
		object.Put(cfg, "maxUnavailable", intOrString(r.MaxUnavailable))
		object.Put(cfg, "maxSurge", intOrString(r.MaxSurge))
		spec["rolloutStrategy"] = map[string]any{"type": "RollingUpdate", "rollingUpdateConfiguration": cfg}
	}
	meta := map[string]any{}
	if object.Known(m.QueueName) {
		meta["labels"] = map[string]any{QueueLabel: m.QueueName.ValueString()}
	}
	if m.Serving != nil {
		meta["annotations"] = map[string]any{ServingAnnotation: servingRecord(m.Serving)}
	}
	return map[string]any{"metadata": meta, "spec": spec}
}

// intOrString writes "1" as 1 and "25%" as "25%".
func intOrString(v types.String) any {
	if !object.Known(v) {
		return nil
	}
	if n, err := strconv.ParseInt(v.ValueString(), 10, 64); err == nil {
		return n
	}
	return v.ValueString()
}

func readIntOrString(v any) types.String {
	switch x := v.(type) {
	case string:
		return types.StringValue(x)
	case int64, float64, int:
		return types.StringValue(object.Int64(x).String())
	}
	return types.StringNull()
}

func readLWS(live map[string]any, m *lwsGroupModel) {
	spec := object.Fields(live, "spec")
	tmpl := object.Fields(spec, "leaderWorkerTemplate")
	m.Replicas = object.Int64(spec["replicas"])
	m.Size = object.Int64(tmpl["size"])
	m.StartupPolicy = object.String(spec["startupPolicy"], m.StartupPolicy)
	m.RestartPolicy = object.String(tmpl["restartPolicy"], m.RestartPolicy)
	if cfg := object.Fields(spec, "rolloutStrategy", "rollingUpdateConfiguration"); cfg != nil {
		m.Rollout = &rolloutModel{MaxUnavailable: readIntOrString(cfg["maxUnavailable"]), MaxSurge: readIntOrString(cfg["maxSurge"])}
	} else {
		m.Rollout = nil
	}
	m.QueueName = object.String(object.Field(live, "metadata", "labels", QueueLabel), m.QueueName)
	rec, _ := object.Field(live, "metadata", "annotations", ServingAnnotation).(string)
	m.Serving = servingFromRecord(rec)
	m.ModelCache = modelCacheIn(object.Fields(tmpl, "workerTemplate"), m.ModelCache)
	// The model cache's volume and mount and the serving block's probes
	// are the group's, not the templates' own.
	m.Worker, m.Leader = templatesIn(tmpl, m.Worker, m.Leader, m.ModelCache != nil, m.Serving != nil)
	if m.WaitForReady.IsNull() {
		m.WaitForReady = types.BoolValue(true) // import: the default
	}
	if m.AllowScaleToZero.IsNull() {
		// Not on the object: an import adopts a group scaled to zero as chosen.
		m.AllowScaleToZero = types.BoolValue(m.Replicas.ValueInt64() == 0)
	}
	derive(m)
}

func validateLWS(m *lwsGroupModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if c := m.ModelCache; c != nil && object.Known(c.Mode) {
		switch mode := c.Mode.ValueString(); {
		case mode == "pvc" && c.ClaimName.IsNull():
			diags.AddAttributeError(path.Root("model_cache").AtName("claim_name"), "Missing claim_name", "a pvc model cache is mounted by its claim_name.")
		case mode == "node_local" && c.HostPath.IsNull():
			diags.AddAttributeError(path.Root("model_cache").AtName("host_path"), "Missing host_path", "a node_local model cache is mounted from its host_path.")
		}
	}
	cached := m.ModelCache != nil
	diags.Append(validateTemplate(m.Worker, path.Root("worker"), cached, m.Serving != nil && m.Leader == nil)...)
	diags.Append(validateTemplate(m.Leader, path.Root("leader"), cached, m.Serving != nil)...)
	diags.Append(checkScaleToZero(m)...)
	if m.Serving != nil {
		diags.Append(checkProbePaths(m.Serving)...)
		diags.Append(checkFit(m)...)
	}
	return diags
}

// templatesIn reads the worker and leader templates. Serving probes only
// the leader, so a leader template that is the worker's plus those probes is
// what a configuration without a leader block writes: read as no leader. A
// serving group without a leader template was written when the worker
// template carried the probes for every pod; its leader is read as a copy
// of that template, so that a configuration without a leader block plans an
// update that takes the probes off the workers.
func templatesIn(tmpl map[string]any, priorWorker, priorLeader *podTemplateModel, cached, serving bool) (worker, leader *podTemplateModel) {
	liveWorker, liveLeader := object.Fields(tmpl, "workerTemplate"), object.Fields(tmpl, "leaderTemplate")
	worker = templateIn(liveWorker, priorWorker, cached, false)
	switch {
	case !serving || priorLeader != nil:
		return worker, templateIn(liveLeader, priorLeader, cached, serving)
	case liveLeader == nil:
		return worker, templateIn(liveWorker, priorWorker, cached, true)
	}
	leader = templateIn(liveLeader, priorWorker, cached, true)
	if reflect.DeepEqual(leader, worker) {
		return worker, nil
	}
	return worker, templateIn(liveLeader, nil, cached, true)
}
