// Package sizing is the memory arithmetic of inference serving: how many GPUs
// one replica of a model needs, how they split over nodes, and how many
// requests a replica holds at once. Pure functions, no I/O.
//
// Units. Bytes are bytes; "GB" in messages and docs is 10^9 bytes, "GiB" is
// 2^30. A GPU's memory is a Kubernetes quantity: "80G" is 80 × 10^9 bytes,
// "80Gi" is 80 × 2^30 ≈ 85.9 × 10^9 bytes. NVIDIA's GPU feature discovery
// publishes nvidia.com/gpu.memory in MiB (an H100 80GB reports 81559, i.e.
// 81559 × 2^20 ≈ 85.5 × 10^9 bytes).
//
// The arithmetic (fit.go has the two rules every serving resource shares):
//
//	weights          = params_billion × 10^9 × bytes per parameter   (or model_bytes)
//	usable per GPU   = ⌊gpu_memory × (1 − reserve_fraction)⌋
//	min_gpus         = smallest n with ⌈weights ÷ n⌉ + ⌈kv_request ÷ n⌉ + overhead ≤ usable
//	                   (the fit rule; kv_request is one request's KV cache, 0 when unknown)
//	tensor_parallel  = smallest n ≥ min_gpus that the tensor-parallel rule accepts
//	                   (divides the attention heads when they are given, a power
//	                   of two when they are not) and that is at most one node or
//	                   a whole number of nodes
//	nodes_per_replica= 1 when tensor_parallel ≤ gpus_per_node, else
//	                   tensor_parallel ÷ gpus_per_node (whole nodes)
//	needs_lws        = nodes_per_replica > 1
//	replicas_per_node= ⌊gpus_per_node ÷ tensor_parallel⌋ (0 when a replica spans nodes)
//	max_concurrency  = ⌊(usable − ⌈weights ÷ tp⌉ − overhead) × tp ÷ kv_request⌋
//
// Worked cases (no overhead): a 70B model in fp16 is 140 GB; an 80 GB card
// keeps 72 GB after the default 10% reserve, so 2 GPUs (144 GB) hold it:
// tensor parallel 2 on one node, 4 replicas per 8-GPU node, no
// LeaderWorkerSet. A 671B model in fp8 is 671 GB: 10 × 72 GB = 720 GB is the
// fewest GPUs that hold it; with its 128 attention heads the smallest valid
// tensor parallelism from 10 up is 16, so on 8-GPU nodes one replica is
// 2 nodes × 8 GPUs and needs a LeaderWorkerSet.
package sizing

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/quantity"
)

// MaxGPUs is the most GPUs one replica may span; past it the sizing refuses
// (tensor parallelism over more than 64 GPUs is not a serving setup).
const MaxGPUs = 64

// DefaultReserveFraction is the share of each GPU's memory kept for the
// framework (CUDA context, activations, fragmentation).
const DefaultReserveFraction = 0.1

// GPUMemoryLabel is the node label NVIDIA's GPU feature discovery sets to a
// GPU's memory in MiB.
const GPUMemoryLabel = "nvidia.com/gpu.memory"

// bytesPerParam of each supported dtype.
var bytesPerParam = map[string]float64{
	"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "int4": 0.5,
}

// DTypes are the supported dtypes, sorted.
func DTypes() []string {
	out := make([]string, 0, len(bytesPerParam))
	for k := range bytesPerParam {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// BytesPerParam is the size of one parameter in dtype.
func BytesPerParam(dtype string) (float64, bool) {
	b, ok := bytesPerParam[dtype]
	return b, ok
}

// WeightsBytes is params_billion × 10^9 × bytes per parameter, rounded up to
// a whole byte.
func WeightsBytes(paramsBillion float64, dtype string) (int64, error) {
	b, ok := bytesPerParam[dtype]
	if !ok {
		return 0, fmt.Errorf("dtype %q is not one of %s", dtype, strings.Join(DTypes(), ", "))
	}
	if !(paramsBillion > 0) || math.IsInf(paramsBillion, 0) {
		return 0, fmt.Errorf("params_billion must be a positive number, got %v", paramsBillion)
	}
	w := math.Ceil(paramsBillion * 1e9 * b)
	if w >= math.MaxInt64/2 {
		return 0, fmt.Errorf("%v billion parameters are more than any GPU set holds", paramsBillion)
	}
	return int64(w), nil
}

// ParseGPUMemory parses a quantity ("80Gi", "80G", "81559Mi") into bytes.
func ParseGPUMemory(s string) (int64, error) {
	q, err := quantity.Parse(s)
	if err != nil {
		return 0, err
	}
	if q.Sign() <= 0 {
		return 0, errors.New("GPU memory must be positive")
	}
	v := q.Value() // rounds a fraction of a byte up
	if q.CmpInt64(v) != 0 {
		return 0, fmt.Errorf("GPU memory %s is not a whole number of bytes", s)
	}
	return v, nil
}

// GPUMemoryFromLabel converts the value of nvidia.com/gpu.memory (MiB) to a
// quantity string, e.g. "81559" → "81559Mi".
func GPUMemoryFromLabel(mib string) (string, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(mib), 10, 64)
	if err != nil || n <= 0 || n > 1<<40 {
		return "", fmt.Errorf("label %s=%q is not a positive number of MiB", GPUMemoryLabel, mib)
	}
	return strconv.FormatInt(n, 10) + "Mi", nil
}

// UsablePerGPU is ⌊gpuBytes × (1 − reserve)⌋, reserve in [0, 1).
func UsablePerGPU(gpuBytes int64, reserve float64) (int64, error) {
	if gpuBytes <= 0 {
		return 0, errors.New("GPU memory must be positive")
	}
	if !(reserve >= 0 && reserve < 1) {
		return 0, fmt.Errorf("reserve_fraction must be in [0, 1), got %v", reserve)
	}
	u := int64(math.Floor(float64(gpuBytes) * (1 - reserve)))
	if u <= 0 {
		return 0, fmt.Errorf("nothing of a %s GPU is left after reserving %v of it", GB(gpuBytes), reserve)
	}
	return u, nil
}

// Input is one sizing question. Exactly one of ModelBytes and
// ParamsBillion+DType describes the weights.
type Input struct {
	ModelBytes    int64
	ParamsBillion float64
	DType         string
	// GPUMemoryBytes is one GPU's memory.
	GPUMemoryBytes int64
	GPUsPerNode    int64
	// KVCacheBytesPerRequest is one request's KV cache at the configured
	// context length; 0 when unknown.
	KVCacheBytesPerRequest int64
	ReserveFraction        float64
	// OverheadBytes per GPU (DefaultOverheadBytes is the usual value).
	OverheadBytes int64
	// Heads constrain the tensor parallelism; zero values are unknown.
	Heads Heads
}

// Result is the answer.
type Result struct {
	WeightsBytes      int64
	UsableBytesPerGPU int64
	MinGPUs           int64
	TensorParallel    int64
	NodesPerReplica   int64
	GPUsPerPod        int64 // GPUs of each of the replica's nodes (pods)
	NeedsLWS          bool
	ReplicasPerNode   int64 // 0 when a replica spans nodes
	// MaxConcurrencyPerReplica is set only with a KV cache size.
	MaxConcurrencyPerReplica *int64
	// Fit is the fit rule's numbers at TensorParallel.
	Fit FitResult
	// TensorParallelBasis says which TPs the rule allowed (Heads.Basis).
	TensorParallelBasis string
}

// Weights returns the weights' size from either description.
func (in Input) Weights() (int64, error) {
	hasBytes, hasParams := in.ModelBytes != 0, in.ParamsBillion != 0 || in.DType != ""
	switch {
	case hasBytes && hasParams:
		return 0, errors.New("give either model_bytes or params_billion and dtype, not both")
	case hasBytes:
		if in.ModelBytes < 0 {
			return 0, fmt.Errorf("model_bytes must be positive, got %d", in.ModelBytes)
		}
		return in.ModelBytes, nil
	case hasParams:
		return WeightsBytes(in.ParamsBillion, in.DType)
	}
	return 0, errors.New("give model_bytes, or params_billion and dtype")
}

// Size answers in with the fit rule and the tensor-parallel rule.
func Size(in Input) (Result, error) {
	var r Result
	w, err := in.Weights()
	if err != nil {
		return r, err
	}
	if in.GPUsPerNode < 1 {
		return r, fmt.Errorf("gpus_per_node must be at least 1, got %d", in.GPUsPerNode)
	}
	if in.KVCacheBytesPerRequest < 0 {
		return r, fmt.Errorf("kv_cache_bytes_per_request must not be negative, got %d", in.KVCacheBytesPerRequest)
	}
	f, err := Fit(FitInput{WeightsBytes: w, TensorParallel: 1, KVBytesPerRequest: in.KVCacheBytesPerRequest,
		GPUMemoryBytes: in.GPUMemoryBytes, ReserveFraction: in.ReserveFraction, OverheadBytes: in.OverheadBytes})
	if err != nil {
		return r, err
	}
	r.WeightsBytes, r.UsableBytesPerGPU = w, f.UsableBytesPerGPU
	if f.MinTensorParallel == 0 {
		what := GB(w) + " of weights"
		if in.KVCacheBytesPerRequest > 0 {
			what += " and one request's KV cache of " + GB(in.KVCacheBytesPerRequest)
		}
		if in.OverheadBytes > 0 {
			what += " with " + GB(in.OverheadBytes) + " of overhead per GPU"
		}
		return r, fmt.Errorf("%s do not fit %d GPUs of %s (%s usable each after the %v reserve): "+
			"one replica would need more than %d GPUs; use a smaller dtype or larger GPUs",
			what, MaxGPUs, GB(in.GPUMemoryBytes), GB(f.UsableBytesPerGPU), in.ReserveFraction, MaxGPUs)
	}
	r.MinGPUs = f.MinTensorParallel
	r.TensorParallelBasis = in.Heads.Basis()
	r.TensorParallel = ChooseTensorParallel(r.MinGPUs, in.GPUsPerNode, in.Heads)
	if r.TensorParallel == 0 {
		return r, fmt.Errorf("%s of weights need at least %d GPUs, but no tensor parallelism from %d to %d is both valid for the model (%s: %s) "+
			"and at most one node or whole nodes of %d GPUs", GB(w), r.MinGPUs, r.MinGPUs, MaxGPUs,
			in.Heads.Basis(), joinInts(ValidTensorParallel(in.Heads)), in.GPUsPerNode)
	}
	r.NodesPerReplica, r.GPUsPerPod, _ = Placement(r.TensorParallel, in.GPUsPerNode)
	if r.NodesPerReplica == 1 {
		r.ReplicasPerNode = in.GPUsPerNode / r.TensorParallel
	} else {
		r.NeedsLWS = true
	}
	r.Fit, _ = Fit(FitInput{WeightsBytes: w, TensorParallel: r.TensorParallel, KVBytesPerRequest: in.KVCacheBytesPerRequest,
		GPUMemoryBytes: in.GPUMemoryBytes, ReserveFraction: in.ReserveFraction, OverheadBytes: in.OverheadBytes})
	if in.KVCacheBytesPerRequest > 0 {
		c := r.Fit.MaxConcurrency
		r.MaxConcurrencyPerReplica = &c
	}
	return r, nil
}

// GB prints bytes in GB (10^9 bytes), with at most two decimals.
func GB(b int64) string {
	v := math.Round(float64(b)/1e7) / 100
	return strconv.FormatFloat(v, 'f', -1, 64) + " GB"
}
