package training

import (
	"context"
	"fmt"
	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/float64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/fabric"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// Defaults of aiplatform_nccl_check (documented in the schema).
const (
	// DefaultImage ships Open MPI, sshd and nccl-tests built under
	// fabric.DefaultBinaryDir (CoreWeave's published nccl-tests image).
	DefaultImage     = "ghcr.io/coreweave/nccl-tests:12.8.1-devel-ubuntu22.04-nccl2.26.2-1-0708d2e"
	DefaultNamespace = "default"
	DefaultTimeout   = "30m"
	// DefaultCleanupTimeout is timeouts.delete's default: removing the
	// check's MPIJob after a run and on destroy.
	DefaultCleanupTimeout = 3 * time.Minute
	DefaultMinBytes       = "8"
	DefaultMaxBytes       = "8G"
	DefaultStep           = 2
	DefaultIters          = 20
	DefaultWarmup         = 5
)

// DefaultWorkerCommand keeps a worker alive for the launcher's mpirun, which
// reaches it over ssh (the MPI Operator mounts the keys).
var DefaultWorkerCommand = []string{"/usr/sbin/sshd", "-De"}

type checkModel struct {
	ID           types.String `tfsdk:"id"`
	Namespace    types.String `tfsdk:"namespace"`
	Name         types.String `tfsdk:"name"`
	NodeSelector types.Map    `tfsdk:"node_selector"`
	Tolerations  types.List   `tfsdk:"tolerations"`
	Nodes        types.Int64  `tfsdk:"nodes"`
	GPUsPerNode  types.Int64  `tfsdk:"gpus_per_node"`
	GPUResource  types.String `tfsdk:"gpu_resource"`

	Image         types.String `tfsdk:"image"`
	Command       types.List   `tfsdk:"command"`
	WorkerCommand types.List   `tfsdk:"worker_command"`
	Binary        types.String `tfsdk:"binary"`
	BinaryDir     types.String `tfsdk:"binary_dir"`
	MinBytes      types.String `tfsdk:"min_bytes"`
	MaxBytes      types.String `tfsdk:"max_bytes"`
	StepFactor    types.Int64  `tfsdk:"step_factor"`
	Iterations    types.Int64  `tfsdk:"iterations"`
	Warmup        types.Int64  `tfsdk:"warmup_iterations"`
	Env           types.Map    `tfsdk:"env"`
	HostNetwork   types.Bool   `tfsdk:"host_network"`
	RDMAResources types.Map    `tfsdk:"rdma_resources"`
	QueueName     types.String `tfsdk:"queue_name"`

	NICsPerNode     types.Int64   `tfsdk:"nics_per_node"`
	NICGbps         types.Float64 `tfsdk:"nic_gbps"`
	PeakBusBW       types.Float64 `tfsdk:"peak_busbw_gbps"`
	GoodRatio       types.Float64 `tfsdk:"good_ratio"`
	AcceptableRatio types.Float64 `tfsdk:"acceptable_ratio"`
	FailOn          types.String  `tfsdk:"fail_on"`
	Triggers        types.Map     `tfsdk:"triggers"`
	Timeout         types.String  `tfsdk:"timeout"`

	BusBW        types.Float64 `tfsdk:"busbw_gbps"`
	BusBWAtBytes types.Int64   `tfsdk:"busbw_at_bytes"`
	AvgBusBW     types.Float64 `tfsdk:"avg_busbw_gbps"`
	Ratio        types.Float64 `tfsdk:"ratio"`
	Verdict      types.String  `tfsdk:"verdict"`
	OutOfBounds  types.Int64   `tfsdk:"out_of_bounds"`
	Transport    types.String  `tfsdk:"transport"`
	NCCLVersion  types.String  `tfsdk:"nccl_version"`
	Results      types.List    `tfsdk:"results"`
	NodesTested  types.List    `tfsdk:"nodes_tested"`
	RanAt        types.String  `tfsdk:"ran_at"`

	Timeouts timeouts.Value `tfsdk:"timeouts"`
}

type tolerationModel struct {
	Key      types.String `tfsdk:"key"`
	Operator types.String `tfsdk:"operator"`
	Value    types.String `tfsdk:"value"`
	Effect   types.String `tfsdk:"effect"`
}

var tolerationTypes = map[string]attr.Type{
	"key": types.StringType, "operator": types.StringType, "value": types.StringType, "effect": types.StringType,
}

// rowTypes is one line of the per-size table.
var rowTypes = map[string]attr.Type{
	"size_bytes":          types.Int64Type,
	"count":               types.Int64Type,
	"type":                types.StringType,
	"redop":               types.StringType,
	"time_us":             types.Float64Type,
	"algbw_gbps":          types.Float64Type,
	"busbw_gbps":          types.Float64Type,
	"wrong":               types.Int64Type,
	"in_place_time_us":    types.Float64Type,
	"in_place_algbw_gbps": types.Float64Type,
	"in_place_busbw_gbps": types.Float64Type,
	"in_place_wrong":      types.Int64Type,
}

// NewNCCLCheck is aiplatform_nccl_check.
func NewNCCLCheck() resource.Resource { return &ncclCheck{} }

type ncclCheck struct{ client *kube.Client }

var (
	_ resource.ResourceWithConfigure      = (*ncclCheck)(nil)
	_ resource.ResourceWithModifyPlan     = (*ncclCheck)(nil)
	_ resource.ResourceWithValidateConfig = (*ncclCheck)(nil)
	_ resource.ResourceWithImportState    = (*ncclCheck)(nil)
)

func (r *ncclCheck) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_nccl_check"
}

func (r *ncclCheck) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if c, ok := req.ProviderData.(*kube.Client); ok {
		r.client = c
	}
}

const description = "A fabric check before training: runs nccl-tests (`all_reduce_perf` by default) across the nodes of a " +
	"GPU pool through an MPIJob (MPI Operator, `kubeflow.org/v2beta1`), reads the launcher's log, and records the " +
	"bus bandwidth of the table's last row (the largest message size) against the NICs' peak (`nics_per_node` × " +
	"`nic_gbps` ÷ 8, or `peak_busbw_gbps`): `good` at ≥ `good_ratio` (0.90), `acceptable` at ≥ `acceptable_ratio` " +
	"(0.80), else `bad`. A verdict that `fail_on` rejects, out-of-bounds values, a failed or truncated run, or a " +
	"launcher that cannot start fail the apply with the verdict, the numbers and the whole checklist (the items the " +
	"log evidences marked); an `acceptable` run applies with a warning that says so. The MPIJob is deleted whatever happens, so no pod " +
	"is left behind. The result lives in Terraform state only: a refresh reads nothing from the cluster, and the " +
	"check runs again (planned as a replacement, with the reason) when the pool's Ready nodes change, when an input " +
	"changes, or when `triggers` change. See the fabric-check guide for the arithmetic and the checklist."

func code(s string) string { return "`" + s + "`" }

func computedFloat(desc string) schema.Float64Attribute {
	return schema.Float64Attribute{Computed: true, MarkdownDescription: desc}
}

func (r *ncclCheck) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	strList := func(desc string) schema.ListAttribute {
		return schema.ListAttribute{ElementType: types.StringType, Optional: true, Computed: true, MarkdownDescription: desc,
			Validators: []validator.List{listvalidator.SizeAtLeast(1)}}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: description,
		// The run's own deadline is `timeout` (the cluster enforces it);
		// timeouts.delete bounds removing its MPIJob, after a run and on
		// destroy.
		Blocks: map[string]schema.Block{"timeouts": object.TimeoutsBlock(ctx,
			"MPIJob of the check with its pods (also after every run)", 0, DefaultCleanupTimeout)},
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, MarkdownDescription: "`namespace/name` of the check (and of its MPIJob while it runs)."},
			"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the check and of the MPIJob it runs (a DNS label).",
				Validators: []validator.String{validators.DNSLabel(), stringvalidator.LengthAtMost(40),
					stringvalidator.RegexMatches(regexp.MustCompile(`^[a-z]`), "must start with a letter: the MPI Operator names the workers' pods and Services <name>-worker-<i>, which must be DNS-1035 labels")}},
			"namespace": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(DefaultNamespace),
				MarkdownDescription: "Namespace the MPIJob runs in. Default `default`.", Validators: []validator.String{validators.DNSLabel()}},
			"node_selector": schema.MapAttribute{ElementType: types.StringType, Required: true,
				MarkdownDescription: "Labels of the pool's nodes, e.g. `aiplatform_gpu_node_pool.h100.selector`. The workers run " +
					"only on Ready, schedulable nodes that carry them, one worker per node.",
				Validators: []validator.Map{mapvalidator.SizeAtLeast(1), validators.Labels()}},
			"tolerations": schema.ListNestedAttribute{Optional: true,
				MarkdownDescription: "Tolerations of the workers, e.g. for the pool's taints.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"key":      schema.StringAttribute{Optional: true, MarkdownDescription: "Taint key; unset with operator `Exists` tolerates every taint.", Validators: []validator.String{validators.QualifiedName()}},
					"operator": schema.StringAttribute{Optional: true, MarkdownDescription: "`Equal` (Kubernetes' default) or `Exists`.", Validators: []validator.String{stringvalidator.OneOf("Equal", "Exists")}},
					"value":    schema.StringAttribute{Optional: true, MarkdownDescription: "Taint value (with `Equal`).", Validators: []validator.String{validators.LabelValue()}},
					"effect":   schema.StringAttribute{Optional: true, MarkdownDescription: "`NoSchedule`, `PreferNoSchedule` or `NoExecute`; unset matches all.", Validators: []validator.String{stringvalidator.OneOf("NoSchedule", "PreferNoSchedule", "NoExecute")}},
				}}},
			"nodes": schema.Int64Attribute{Optional: true, Computed: true,
				MarkdownDescription: "How many nodes the check spans. Default: every Ready, schedulable node of the pool at plan time (the first ones by name when fewer are asked for).",
				Validators:          []validator.Int64{int64validator.AtLeast(1)}},
			"gpus_per_node": schema.Int64Attribute{Required: true,
				MarkdownDescription: "GPUs of each node the check uses: one MPI rank per GPU (mpirun `-np nodes × gpus_per_node`).",
				Validators:          []validator.Int64{int64validator.AtLeast(1)}},
			"gpu_resource": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(capacity.DefaultGPUResource),
				MarkdownDescription: "Extended resource name of the GPUs. Default `nvidia.com/gpu`.", Validators: []validator.String{validators.QualifiedName()}},
			"image": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(DefaultImage),
				MarkdownDescription: "Image of the launcher and the workers: Open MPI, sshd and nccl-tests under `binary_dir`. Default " + code(DefaultImage) + ".",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)}},
			"command": strList("The launcher's command. Default (computed at plan): `mpirun --allow-run-as-root -np N×G --map-by ppr:G:node " +
				"--bind-to none -x NAME=VALUE… <binary_dir>/<binary> -b <min_bytes> -e <max_bytes> -f <step_factor> -g 1 -n <iterations> -w <warmup_iterations> -c 1`. " +
				"An override must print nccl-tests' output to the launcher's log."),
			"worker_command": schema.ListAttribute{ElementType: types.StringType, Optional: true, Computed: true,
				Default:             listdefault.StaticValue(stringListValue(DefaultWorkerCommand)),
				MarkdownDescription: "The workers' command: it must keep sshd running for mpirun. Default `[\"/usr/sbin/sshd\", \"-De\"]`.",
				Validators:          []validator.List{listvalidator.SizeAtLeast(1)}},
			"binary": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(fabric.DefaultBinary),
				MarkdownDescription: "The nccl-tests collective: one of " + code(strings.Join(fabric.Collectives, "`, `")) + ". Default `all_reduce_perf`.",
				Validators:          []validator.String{stringvalidator.OneOf(fabric.Collectives...)}},
			"binary_dir": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(fabric.DefaultBinaryDir),
				MarkdownDescription: "Directory of the nccl-tests binaries in the image. Default " + code(fabric.DefaultBinaryDir) + "."},
			"min_bytes": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(DefaultMinBytes),
				MarkdownDescription: "Smallest message size (`-b`), bytes with an optional K, M or G suffix (powers of 1024). Default `8`."},
			"max_bytes": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(DefaultMaxBytes),
				MarkdownDescription: "Largest message size (`-e`). Default `8G`."},
			"step_factor": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(DefaultStep),
				MarkdownDescription: "Factor between sizes (`-f`). Default 2.", Validators: []validator.Int64{int64validator.AtLeast(2)}},
			"iterations": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(DefaultIters),
				MarkdownDescription: "Timed iterations per size (`-n`). Default 20.", Validators: []validator.Int64{int64validator.AtLeast(1)}},
			"warmup_iterations": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(DefaultWarmup),
				MarkdownDescription: "Warm-up iterations per size (`-w`). Default 5.", Validators: []validator.Int64{int64validator.AtLeast(0)}},
			"env": schema.MapAttribute{ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Environment of every rank, passed with `mpirun -x` (e.g. `NCCL_DEBUG = \"INFO\"` — needed for " +
					"`transport` —, `NCCL_IB_HCA`, `NCCL_SOCKET_IFNAME`, `NCCL_IB_GID_INDEX`, `NCCL_ALGO`)."},
			"host_network": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Run the workers in the node's network namespace (RoCE without a secondary network). Default false."},
			"rdma_resources": schema.MapAttribute{ElementType: types.Int64Type, Optional: true,
				MarkdownDescription: "Extended resources each worker requests for its RDMA devices, e.g. `{ \"rdma/ib\" = 1 }` " +
					"(the RDMA device plugin's name); the workers then also get the `IPC_LOCK` capability."},
			"queue_name": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Kueue LocalQueue of the MPIJob (`kueue.x-k8s.io/queue-name`): the check waits for free nodes " +
					"instead of competing with jobs. Kueue's `kubeflow.org/mpijob` integration must be on.",
				Validators: []validator.String{validators.LabelValue()}},
			"nics_per_node": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "NICs per node that carry GPU traffic; with `nic_gbps` gives the peak. Conflicts with `peak_busbw_gbps`.",
				Validators:          []validator.Int64{int64validator.AtLeast(1)}},
			"nic_gbps": schema.Float64Attribute{Optional: true,
				MarkdownDescription: "Port speed of each NIC in Gb/s (100, 200, 400…).",
				Validators:          []validator.Float64{float64validator.AtLeast(0.001)}},
			"peak_busbw_gbps": schema.Float64Attribute{Optional: true, Computed: true,
				MarkdownDescription: "Theoretical peak bus bandwidth in GB/s. Computed at plan as `nics_per_node × nic_gbps ÷ 8` unless given.",
				Validators:          []validator.Float64{float64validator.AtLeast(0.001)}},
			"good_ratio": schema.Float64Attribute{Optional: true, Computed: true, Default: float64default.StaticFloat64(fabric.DefaultGoodRatio),
				MarkdownDescription: "Ratio of the peak from which the verdict is `good`. Default 0.90."},
			"acceptable_ratio": schema.Float64Attribute{Optional: true, Computed: true, Default: float64default.StaticFloat64(fabric.DefaultAcceptableRatio),
				MarkdownDescription: "Ratio of the peak from which the verdict is `acceptable`; below it, `bad`. Default 0.80."},
			"fail_on": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(string(fabric.FailOnBad)),
				MarkdownDescription: "Which verdict fails the apply: `bad` (default), `acceptable` (acceptable and bad) or `never` " +
					"(record only; a `bad` run then applies with a warning). Out-of-bounds values, truncated and failed runs always fail, " +
					"with a verdict of their own (`out_of_bounds`, `truncated`, `no_result`, `failed`), never a bandwidth verdict.",
				Validators: []validator.String{stringvalidator.OneOf(fabric.FailOnValues()...)}},
			"triggers": schema.MapAttribute{ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Arbitrary values whose change re-runs the check (e.g. a driver version, a date)."},
			"timeout": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(DefaultTimeout),
				MarkdownDescription: "How long a run may take, waiting for nodes included; also the MPIJob's `activeDeadlineSeconds`, so the " +
					"cluster ends a run that outlives it even when Terraform is gone. A launcher that cannot start fails with its pod's reason at " +
					"the latest then. Default `30m`. Changing it does not re-run the check. (Removing the MPIJob afterwards is bounded by " +
					"`timeouts.delete`.)"},

			"busbw_gbps": computedFloat("Bus bandwidth of the table's last row — the largest message size (`max_bytes` when the run reached it) — in its " +
				"out-of-place `busbw` column, GB/s (the same value as the last element of `results`): what the verdict compares " +
				"with the peak. Not the highest busbw of any row: the largest messages are bandwidth-bound, the small ones " +
				"latency-bound, and a fabric that collapses at the largest sizes is what slows training."),
			"busbw_at_bytes": schema.Int64Attribute{Computed: true, MarkdownDescription: "Message size of the row `busbw_gbps` is read from: the table's largest (its last row)."},
			"avg_busbw_gbps": computedFloat("nccl-tests' own `# Avg bus bandwidth` (every size weighted equally, latency-bound ones included), GB/s; " +
				"recorded, not judged; null when the log does not print it."),
			"ratio": computedFloat("`busbw_gbps ÷ peak_busbw_gbps`: the fraction of the peak the largest-size row reaches."),
			"verdict": schema.StringAttribute{Computed: true, MarkdownDescription: "`good`, `acceptable` or `bad`: `ratio` (the largest-size row) " +
				"against `good_ratio` and `acceptable_ratio`. Only a whole, correct run is recorded; the others fail the apply with the verdict " +
				"`out_of_bounds`, `truncated`, `no_result` or `failed`."},
			"out_of_bounds": schema.Int64Attribute{Computed: true, MarkdownDescription: "Out-of-bounds values of the correctness check (0 when the run passed)."},
			"transport": schema.StringAttribute{Computed: true,
				MarkdownDescription: "The network NCCL reported with `NCCL_DEBUG=INFO`: `IB`, `RoCE`, `Socket`, `IntraNode`, `Other`; empty when the log has no INFO lines."},
			"nccl_version": schema.StringAttribute{Computed: true, MarkdownDescription: "NCCL version the log printed, when it did."},
			"results": schema.ListNestedAttribute{Computed: true,
				MarkdownDescription: "The per-size table: out-of-place and in-place time (µs), algbw and busbw (GB/s), and `#wrong` (-1 when not checked).",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"size_bytes": schema.Int64Attribute{Computed: true, MarkdownDescription: "Message size of the row, bytes."},
					"count":      schema.Int64Attribute{Computed: true, MarkdownDescription: "Elements per message (`size_bytes` ÷ the element size)."},
					"type":       schema.StringAttribute{Computed: true, MarkdownDescription: "Element data type, e.g. `float`."},
					"redop":      schema.StringAttribute{Computed: true, MarkdownDescription: "Reduction operation, e.g. `sum` (`none` for collectives without one)."},
					"time_us":    schema.Float64Attribute{Computed: true, MarkdownDescription: "Out-of-place time of one collective, µs."},
					"algbw_gbps": schema.Float64Attribute{Computed: true, MarkdownDescription: "Out-of-place algorithm bandwidth (`size_bytes` ÷ time), GB/s."},
					"busbw_gbps": schema.Float64Attribute{Computed: true, MarkdownDescription: "Out-of-place bus bandwidth (algbw × the collective's factor, e.g. 2(n−1)/n for all-reduce), GB/s: the figure judged against the NICs."},
					"wrong":      schema.Int64Attribute{Computed: true, MarkdownDescription: "Out-of-place values that failed the correctness check; -1 when not checked."},
					"in_place_time_us": schema.Float64Attribute{Computed: true,
						MarkdownDescription: "In-place time of one collective, µs; null when the log has no in-place column."},
					"in_place_algbw_gbps": schema.Float64Attribute{Computed: true,
						MarkdownDescription: "In-place algorithm bandwidth, GB/s; null when the log has no in-place column."},
					"in_place_busbw_gbps": schema.Float64Attribute{Computed: true,
						MarkdownDescription: "In-place bus bandwidth, GB/s; null when the log has no in-place column."},
					"in_place_wrong": schema.Int64Attribute{Computed: true,
						MarkdownDescription: "In-place values that failed the correctness check (-1 when not checked); null when the log has no in-place column."},
				}}},
			"nodes_tested": schema.ListAttribute{ElementType: types.StringType, Computed: true,
				MarkdownDescription: "The nodes the workers ran on, sorted; known at plan from the pool's live nodes. A change re-runs the check."},
			"ran_at": schema.StringAttribute{Computed: true, MarkdownDescription: "When the run finished (RFC 3339, UTC)."},
		},
	}
}

func stringListValue(s []string) types.List {
	elems := make([]attr.Value, len(s))
	for i, v := range s {
		elems[i] = types.StringValue(v)
	}
	return types.ListValueMust(types.StringType, elems)
}

func (r *ncclCheck) ready() error {
	if r.client == nil {
		return fmt.Errorf("the aiplatform provider's connection attributes are known only after apply, so no cluster is read or written in this run: apply what creates the cluster first (terraform apply -target=...), then apply again")
	}
	return nil
}

func (r *ncclCheck) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m checkModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.ready(); err != nil {
		resp.Diagnostics.AddError("No cluster connection yet", err.Error())
		return
	}
	resp.Diagnostics.Append(r.settle(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	s, diags := resolve(ctx, &m)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	out, err := run(ctx, r.client, s)
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("NCCL check %s failed", s.Ref), err.Error())
		return
	}
	resp.Diagnostics.Append(record(&m, out)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Update changes only what does not re-run the check (timeout): every other
// input is planned as a replacement. The recorded result stays.
func (r *ncclCheck) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m, prior checkModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	keepResult(&m, &prior)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Read keeps the state: the result of a run is not in the cluster (the
// MPIJob is deleted once its log is read), and a refresh must not re-run it.
func (r *ncclCheck) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m checkModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Delete removes an MPIJob an interrupted run may have left; the recorded
// result goes with the state.
func (r *ncclCheck) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m checkModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || r.client == nil {
		return
	}
	ref := kube.Ref{Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString()}
	d, diags := object.TimeoutFor(ctx, m.Timeouts, "delete", DefaultCleanupTimeout)
	resp.Diagnostics.Append(diags...)
	ctx, cancel := object.WithBudget(ctx, "delete", d)
	defer cancel()
	if err := removeJob(ctx, r.client, ref); err != nil && !notServed(err) {
		resp.Diagnostics.AddError(fmt.Sprintf("Removing the MPIJob of NCCL check %s failed", ref), object.Explain(ctx, err))
	}
}

// ImportState refuses: a check's result exists only in the Terraform state
// of the run that recorded it.
func (r *ncclCheck) ImportState(_ context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resp.Diagnostics.AddError("aiplatform_nccl_check cannot be imported",
		fmt.Sprintf("%q: the result of an NCCL check lives only in the Terraform state that ran it — its MPIJob is deleted once "+
			"the launcher's log is read, so the cluster holds nothing to import. Remove the import block (or skip `terraform import`) "+
			"and apply: the check runs and records a fresh result.", req.ID))
}
