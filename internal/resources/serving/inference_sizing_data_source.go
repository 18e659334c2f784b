package serving

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
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
	ReserveFraction        types.Float64 `tfsdk:"reserve_fraction"`

	WeightsBytes             types.Int64 `tfsdk:"weights_bytes"`
	MinGPUs                  types.Int64 `tfsdk:"min_gpus"`
	TensorParallel           types.Int64 `tfsdk:"tensor_parallel"`
	NodesPerReplica          types.Int64 `tfsdk:"nodes_per_replica"`
	NeedsLWS                 types.Bool  `tfsdk:"needs_lws"`
	ReplicasPerNode          types.Int64 `tfsdk:"replicas_per_node"`
	MaxConcurrencyPerReplica types.Int64 `tfsdk:"max_concurrency_per_replica"`
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
				MarkdownDescription: "KV cache one request occupies (context length × per-token KV size). Without it `max_concurrency_per_replica` is null."},
			"reserve_fraction": schema.Float64Attribute{Optional: true, Computed: true,
				MarkdownDescription: "Share of each GPU's memory kept for the framework (CUDA context, activations), in [0, 1). Default `0.1`."},

			"weights_bytes": out("Size of the weights in bytes: `params_billion` × 10^9 × bytes per parameter, or `model_bytes`."),
			"min_gpus": out("Smallest power of two of GPUs whose memory after the reserve holds the weights " +
				"(and one request's KV cache when `kv_cache_bytes_per_request` is set); at most 64."),
			"tensor_parallel":   out("Tensor-parallel degree of one replica: `min_gpus`."),
			"nodes_per_replica": out("Nodes one replica spans: 1 when `min_gpus` ≤ `gpus_per_node`, else the smallest power of two whose nodes give `min_gpus` GPUs in equal parts."),
			"needs_lws": schema.BoolAttribute{Computed: true,
				MarkdownDescription: "True when a replica spans nodes: serve it with a LeaderWorkerSet (`aiplatform_lws_group`) of `nodes_per_replica` pods."},
			"replicas_per_node":           out("Replicas that fit one node: ⌊`gpus_per_node` ÷ `min_gpus`⌋; 0 when a replica spans nodes."),
			"max_concurrency_per_replica": out("Requests one replica holds at once: ⌊(usable memory × `tensor_parallel` − weights) ÷ `kv_cache_bytes_per_request`⌋; null without a KV cache size."),
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
	if object.Known(m.KVCacheBytesPerRequest) && m.KVCacheBytesPerRequest.ValueInt64() < 1 {
		diags.AddAttributeError(path.Root("kv_cache_bytes_per_request"), "Invalid kv_cache_bytes_per_request", "must be at least 1 byte.")
	}
	if diags.HasError() || w == 0 || mem == 0 || !object.Known(m.GPUsPerNode) || m.KVCacheBytesPerRequest.IsUnknown() || m.ReserveFraction.IsUnknown() {
		return sizing.Input{}, false, diags
	}
	return sizing.Input{ModelBytes: w, GPUMemoryBytes: mem, GPUsPerNode: m.GPUsPerNode.ValueInt64(),
		KVCacheBytesPerRequest: m.KVCacheBytesPerRequest.ValueInt64(), ReserveFraction: reserve}, true, diags
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
	m.WeightsBytes = types.Int64Value(r.WeightsBytes)
	m.MinGPUs = types.Int64Value(r.MinGPUs)
	m.TensorParallel = types.Int64Value(r.TensorParallel)
	m.NodesPerReplica = types.Int64Value(r.NodesPerReplica)
	m.NeedsLWS = types.BoolValue(r.NeedsLWS)
	m.ReplicasPerNode = types.Int64Value(r.ReplicasPerNode)
	m.MaxConcurrencyPerReplica = types.Int64PointerValue(r.MaxConcurrencyPerReplica)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
