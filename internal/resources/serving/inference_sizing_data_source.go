package serving

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/sizing"
)

// NewInferenceSizingDataSource is data.aiplatform_inference_sizing.
func NewInferenceSizingDataSource() datasource.DataSource { return &sizingDataSource{} }

type sizingDataSource struct{}

var _ datasource.DataSourceWithValidateConfig = (*sizingDataSource)(nil)

type sizingModel struct {
	ParamsBillion          types.Float64 `tfsdk:"params_billion"`
	DType                  types.String  `tfsdk:"dtype"`
	ModelBytes             types.Int64   `tfsdk:"model_bytes"`
	GPUMemory              types.String  `tfsdk:"gpu_memory"`
	GPUsPerNode            types.Int64   `tfsdk:"gpus_per_node"`
	KVCacheBytesPerRequest types.Int64   `tfsdk:"kv_cache_bytes_per_request"`
	KVCacheBytesPerToken   types.Int64   `tfsdk:"kv_cache_bytes_per_token"`
	ContextLength          types.Int64   `tfsdk:"context_length"`
	AttentionHeads         types.Int64   `tfsdk:"attention_heads"`
	KVHeads                types.Int64   `tfsdk:"kv_heads"`
	OverheadBytesPerGPU    types.Int64   `tfsdk:"overhead_bytes_per_gpu"`
	ReserveFraction        types.Float64 `tfsdk:"reserve_fraction"`

	WeightsBytes             types.Int64  `tfsdk:"weights_bytes"`
	MinGPUs                  types.Int64  `tfsdk:"min_gpus"`
	TensorParallel           types.Int64  `tfsdk:"tensor_parallel"`
	NodesPerReplica          types.Int64  `tfsdk:"nodes_per_replica"`
	NeedsLWS                 types.Bool   `tfsdk:"needs_lws"`
	ReplicasPerNode          types.Int64  `tfsdk:"replicas_per_node"`
	MaxConcurrencyPerReplica types.Int64  `tfsdk:"max_concurrency_per_replica"`
	ValidTensorParallel      types.List   `tfsdk:"valid_tensor_parallel"`
	TensorParallelRule       types.String `tfsdk:"tensor_parallel_rule"`
	Fit                      types.String `tfsdk:"fit"`
}

func (d *sizingDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_inference_sizing"
}

func (d *sizingDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	out := func(desc string) schema.Int64Attribute {
		return schema.Int64Attribute{Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "How many GPUs and nodes one replica of a model needs, and how many requests it holds at once: " +
			"pure arithmetic over the weights' size and one GPU's memory, without reading the cluster. " +
			"GB means 10^9 bytes throughout. See the guide *Inference sizing* for the formulas and worked cases.",
		Attributes: map[string]schema.Attribute{
			"params_billion": schema.Float64Attribute{Optional: true,
				MarkdownDescription: "Parameters in billions (e.g. `70`); with `dtype`. Conflicts with `model_bytes`."},
			"dtype": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Type of the weights: `fp32` (4 bytes per parameter), `fp16` or `bf16` (2), `fp8` or `int8` (1), `int4` (0.5). With `params_billion`.",
				Validators:          []validator.String{stringvalidator.OneOf(sizing.DTypes()...)}},
			"model_bytes": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "Size of the weights in bytes, instead of `params_billion` and `dtype`."},
			"gpu_memory": schema.StringAttribute{Required: true,
				MarkdownDescription: "Memory of one GPU as a Kubernetes quantity: `\"80G\"` is 80 × 10^9 bytes, `\"80Gi\"` is 80 × 2^30 bytes; " +
					"the `nvidia.com/gpu.memory` node label is in MiB, so its value `81559` is `\"81559Mi\"`."},
			"gpus_per_node": schema.Int64Attribute{Required: true, MarkdownDescription: "GPUs on each node of the pool."},
			"kv_cache_bytes_per_request": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "KV cache one request occupies at its full context (context length × per-token KV size). Conflicts with `kv_cache_bytes_per_token`. " +
					"Without either, only the weights and the overhead are fitted and `max_concurrency_per_replica` is null."},
			"kv_cache_bytes_per_token": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "KV cache per token: 2 × layers × KV heads × head dimension × bytes per element (Llama 3 8B in bf16: 2 × 32 × 8 × 128 × 2 = 131072). With `context_length`."},
			"context_length": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "Tokens of one request at most (the server's `--max-model-len`); with `kv_cache_bytes_per_token` it gives one request's KV cache."},
			"attention_heads": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "The model's attention heads (`num_attention_heads`): `tensor_parallel` must divide them, as vLLM and SGLang require. Unset: any count is accepted."},
			"kv_heads": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "The model's KV heads (`num_key_value_heads`): `tensor_parallel` must divide them or be a multiple of them (KV heads are then replicated)."},
			"overhead_bytes_per_gpu": schema.Int64Attribute{Optional: true, Computed: true,
				MarkdownDescription: "Memory each GPU keeps beside its share of the weights and KV cache (CUDA context, activations, CUDA graphs). Default 1 GiB (`1073741824`)."},
			"reserve_fraction": schema.Float64Attribute{Optional: true, Computed: true,
				MarkdownDescription: "Share of each GPU's memory kept for the framework (CUDA context, activations), in [0, 1). Default `0.1`."},

			"weights_bytes": out("Size of the weights in bytes: `params_billion` × 10^9 × bytes per parameter, or `model_bytes`."),
			"min_gpus":      out("Fewest GPUs n (at most 64) that pass the fit rule: ⌈weights ÷ n⌉ + ⌈one request's KV cache ÷ n⌉ + overhead ≤ usable memory per GPU."),
			"tensor_parallel": out("Tensor-parallel degree of one replica: the smallest n ≥ `min_gpus` that divides `attention_heads` — a power of two when `attention_heads` is unset — " +
				"that divides or is a multiple of `kv_heads` (when set), and that is at most `gpus_per_node` or a whole number of nodes. vLLM and SGLang refuse a degree that does not divide the heads; " +
				"with the heads given any divisor is accepted (6 for 48 heads), without them only a power of two is safe (real models' head counts are powers of two or small multiples of one, " +
				"almost never divisible by 3): a 70B model that 3 GPUs hold gets 4. `tensor_parallel_rule` says which applied, and the data source warns when it raised the answer."),
			"nodes_per_replica": out("Nodes one replica spans: 1 when `tensor_parallel` ≤ `gpus_per_node`, else `tensor_parallel` ÷ `gpus_per_node`."),
			"valid_tensor_parallel": schema.ListAttribute{Computed: true, ElementType: types.Int64Type,
				MarkdownDescription: "Every tensor-parallel degree from 1 to 64 the heads allow: the divisors of `attention_heads` that divide or are a multiple of `kv_heads`; " +
					"the powers of two (1, 2, 4, …, 64) without `attention_heads`."},
			"tensor_parallel_rule": schema.StringAttribute{Computed: true,
				MarkdownDescription: "Which tensor-parallel degrees were allowed, in words: the divisors of the given heads, or *powers of two only* when `attention_heads` is not given."},
			"fit": schema.StringAttribute{Computed: true,
				MarkdownDescription: "The fit rule's arithmetic at `tensor_parallel`, in words."},
			"needs_lws": schema.BoolAttribute{Computed: true,
				MarkdownDescription: "True when a replica spans nodes: serve it with a LeaderWorkerSet (`aiplatform_lws_group`) of `nodes_per_replica` pods."},
			"replicas_per_node":           out("Replicas that fit one node: ⌊`gpus_per_node` ÷ `tensor_parallel`⌋; 0 when a replica spans nodes."),
			"max_concurrency_per_replica": out("Requests at full context one replica holds at once: ⌊(usable − ⌈weights ÷ tp⌉ − overhead) × tp ÷ one request's KV cache⌋; null without a KV cache size."),
		},
	}
}

// input checks the configuration and returns the sizing question; ok is
// false when a value is invalid or not known yet.
func (m *sizingModel) input() (sizing.Input, bool, diag.Diagnostics) {
	var diags diag.Diagnostics
	w, d := validateWeights(path.Empty(), m.ModelBytes, m.ParamsBillion, m.DType)
	diags.Append(d...)
	reserve, d := validateReserve(path.Root("reserve_fraction"), m.ReserveFraction)
	diags.Append(d...)
	mem, d := validateGPUMemory(path.Root("gpu_memory"), m.GPUMemory)
	diags.Append(d...)
	if object.Known(m.GPUsPerNode) && m.GPUsPerNode.ValueInt64() < 1 {
		diags.AddAttributeError(path.Root("gpus_per_node"), "Invalid gpus_per_node", "must be at least 1.")
	}
	kv, kvOK, d := validateKV(path.Empty(), m.KVCacheBytesPerRequest, m.KVCacheBytesPerToken, m.ContextLength)
	diags.Append(d...)
	heads, d := validateHeads(path.Empty(), m.AttentionHeads, m.KVHeads)
	diags.Append(d...)
	overhead, d := validateOverhead(path.Root("overhead_bytes_per_gpu"), m.OverheadBytesPerGPU)
	diags.Append(d...)
	if diags.HasError() || w == 0 || mem == 0 || !object.Known(m.GPUsPerNode) || !kvOK || m.ReserveFraction.IsUnknown() ||
		m.AttentionHeads.IsUnknown() || m.KVHeads.IsUnknown() || m.OverheadBytesPerGPU.IsUnknown() {
		return sizing.Input{}, false, diags
	}
	return sizing.Input{ModelBytes: w, GPUMemoryBytes: mem, GPUsPerNode: m.GPUsPerNode.ValueInt64(),
		KVCacheBytesPerRequest: kv, ReserveFraction: reserve, OverheadBytes: overhead, Heads: heads}, true, diags
}

// size answers the question, reporting a model that cannot fit on the
// attribute that describes the weights.
func (m *sizingModel) size() (sizing.Result, bool, diag.Diagnostics) {
	in, ok, diags := m.input()
	if !ok {
		return sizing.Result{}, false, diags
	}
	r, err := sizing.Size(in)
	if err != nil {
		p := path.Root("model_bytes")
		if !m.ParamsBillion.IsNull() {
			p = path.Root("params_billion")
		}
		diags.AddAttributeError(p, "Model does not fit", err.Error()+".")
		return r, false, diags
	}
	return r, true, diags
}

// ValidateConfig refuses at plan time what Read would refuse, with the path.
func (d *sizingDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var m sizingModel
	if diags := req.Config.Get(ctx, &m); diags.HasError() {
		return
	}
	_, _, diags := m.size()
	resp.Diagnostics.Append(object.WithPaths(diags)...)
}

func (d *sizingDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m sizingModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r, ok, diags := m.size()
	resp.Diagnostics.Append(object.WithPaths(diags)...)
	if !ok {
		if !resp.Diagnostics.HasError() {
			resp.Diagnostics.AddError("Incomplete sizing input", "every input must be known to size the model.")
		}
		return
	}
	if m.ReserveFraction.IsNull() {
		m.ReserveFraction = types.Float64Value(sizing.DefaultReserveFraction)
	}
	if m.OverheadBytesPerGPU.IsNull() {
		m.OverheadBytesPerGPU = types.Int64Value(sizing.DefaultOverheadBytes)
	}
	heads := sizing.Heads{Attention: m.AttentionHeads.ValueInt64(), KV: m.KVHeads.ValueInt64()}
	var valid []attr.Value
	for _, tp := range sizing.ValidTensorParallel(heads) {
		valid = append(valid, types.Int64Value(tp))
	}
	m.ValidTensorParallel = types.ListValueMust(types.Int64Type, valid)
	m.TensorParallelRule = types.StringValue(r.TensorParallelBasis)
	if placed := smallestPlaced(r.MinGPUs, m.GPUsPerNode.ValueInt64()); heads.Attention == 0 && r.TensorParallel > placed {
		resp.Diagnostics.AddAttributeWarning(path.Root("tensor_parallel"), "Tensor parallelism rounded to a power of two",
			fmt.Sprintf("%d GPUs hold the model, but tensor_parallel is %d, a power of two: attention_heads is not given, vLLM and SGLang refuse a "+
				"tensor parallelism that does not divide the heads, and most models' head counts are powers of two (32, 64, 128). Give attention_heads "+
				"and kv_heads (num_attention_heads and num_key_value_heads of the model's config.json) to allow every divisor of the heads.", placed, r.TensorParallel))
	}
	m.Fit = types.StringValue(r.Fit.Explain())
	m.WeightsBytes = types.Int64Value(r.WeightsBytes)
	m.MinGPUs = types.Int64Value(r.MinGPUs)
	m.TensorParallel = types.Int64Value(r.TensorParallel)
	m.NodesPerReplica = types.Int64Value(r.NodesPerReplica)
	m.NeedsLWS = types.BoolValue(r.NeedsLWS)
	m.ReplicasPerNode = types.Int64Value(r.ReplicasPerNode)
	m.MaxConcurrencyPerReplica = types.Int64PointerValue(r.MaxConcurrencyPerReplica)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// smallestPlaced is the smallest n ≥ minGPUs that is at most one node or
// whole nodes: the answer without the tensor-parallel rule.
func smallestPlaced(minGPUs, gpusPerNode int64) int64 {
	for n := minGPUs; n <= sizing.MaxGPUs; n++ {
		if _, _, ok := sizing.Placement(n, gpusPerNode); ok {
			return n
		}
	}
	return 0
}
