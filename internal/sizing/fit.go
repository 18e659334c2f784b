package sizing

import (
	"errors"
	"fmt"
	"strings"
)

// The fit rule and the tensor-parallel rule, shared by every serving resource
// and by data.aiplatform_inference_sizing.
//
// Fit. One replica with tensor parallelism TP shards its weights and its KV
// cache over TP GPUs. It can serve only if each GPU holds its share of the
// weights, the KV cache of at least one request at the configured context
// length, and the per-GPU overhead (CUDA context, activations, CUDA graphs):
//
//	usable      = ⌊gpu_memory × (1 − reserve_fraction)⌋
//	kv_request  = kv_bytes_per_token × context_length      (or given whole)
//	need        = ⌈weights ÷ TP⌉ + ⌈kv_request ÷ TP⌉ + overhead
//	fits        ⇔ need ≤ usable
//	concurrency = ⌊(usable − ⌈weights ÷ TP⌉ − overhead) × TP ÷ kv_request⌋
//
// A replica that fits has a concurrency of at least 1: a plan that passes
// the rule never serves zero requests at the configured context length.
//
// Tensor parallelism. vLLM refuses a tensor_parallel_size that does not
// divide the model's attention heads ("Total number of attention heads (40)
// must be divisible by tensor parallel size (6)", vllm-project/vllm#4232),
// and shards KV heads the same way, replicating them when TP exceeds their
// number (so TP must divide the KV heads, or the KV heads must divide TP).
// It does not require a power of two: 28 heads accept 1, 2, 4, 7, 14 and 28.
// SGLang shards attention the same way. Real models' head counts are powers
// of two or small multiples of one (32, 40, 48, 64, 128): almost none divides
// by 3, 5 or 7. So, with the heads unknown, only a power of two is a TP that
// will almost surely run:
//
//	valid(TP) ⇔ 1 ≤ TP ≤ 64
//	            ∧ (attention_heads mod TP = 0, or TP a power of two when attention_heads is unknown)
//	            ∧ (kv_heads unknown ∨ kv_heads mod TP = 0 ∨ TP mod kv_heads = 0)
//
// ChooseTensorParallel picks the smallest valid TP that fits and places; a
// resource given a TP checks it with CheckTensorParallel: an error when it
// breaks the rule with the heads known, a note (a plan warning) when the
// attention heads are unknown and it is not a power of two — the server is
// then the judge, and the note says how to let the plan judge instead.

// DefaultOverheadBytes is the per-GPU memory the fit rule keeps beside the
// weights and the KV cache when no overhead is given: CUDA context, peak
// activations and captured CUDA graphs, about 1 GiB each on current servers.
const DefaultOverheadBytes int64 = 1 << 30

// Heads are a model's attention and KV head counts; 0 is unknown.
type Heads struct {
	Attention int64
	KV        int64
}

// allowed is the tensor-parallel rule for a tp within 1..MaxGPUs.
func allowed(tp int64, h Heads) bool {
	switch {
	case h.Attention > 0 && h.Attention%tp != 0:
		return false
	case h.Attention == 0 && !powerOfTwo(tp):
		return false
	case h.KV > 0 && h.KV%tp != 0 && tp%h.KV != 0:
		return false
	}
	return true
}

func powerOfTwo(n int64) bool { return n > 0 && n&(n-1) == 0 }

// CheckTensorParallel applies the tensor-parallel rule to a TP the
// configuration gives. err: out of range, or refused by the known heads.
// note: the attention heads are unknown and tp is not a power of two, so the
// rule cannot be checked and the server may refuse it (a plan warning).
func CheckTensorParallel(tp int64, h Heads) (note string, err error) {
	if tp < 1 || tp > MaxGPUs {
		return "", fmt.Errorf("tensor_parallel must be between 1 and %d, got %d", MaxGPUs, tp)
	}
	if h.Attention < 0 || h.KV < 0 {
		return "", errors.New("head counts must not be negative")
	}
	if h.Attention > 0 && h.Attention%tp != 0 {
		return "", fmt.Errorf("tensor_parallel %d does not divide the model's %d attention heads (vLLM and SGLang shard heads evenly); valid values: %s",
			tp, h.Attention, joinInts(ValidTensorParallel(h)))
	}
	if h.KV > 0 && h.KV%tp != 0 && tp%h.KV != 0 {
		return "", fmt.Errorf("tensor_parallel %d neither divides the model's %d KV heads nor is a multiple of them; valid values: %s",
			tp, h.KV, joinInts(ValidTensorParallel(h)))
	}
	if h.Attention == 0 && !powerOfTwo(tp) {
		return fmt.Sprintf("tensor_parallel %d is not a power of two and the model's attention heads are not given, so the plan cannot check it: "+
			"vLLM and SGLang refuse a tensor parallelism that does not divide the heads, and almost no model's heads divide by %d. "+
			"Give attention_heads (num_attention_heads of the model's config.json) and kv_heads to have it checked, or use a power of two",
			tp, oddPart(tp)), nil
	}
	return "", nil
}

// oddPart is n without its factors of two (3 for 6, 3 for 12, 5 for 10).
func oddPart(n int64) int64 {
	for n > 1 && n%2 == 0 {
		n /= 2
	}
	return n
}

// ValidTensorParallel lists every valid TP, ascending: the divisors the heads
// allow, or the powers of two up to 64 when the attention heads are unknown.
func ValidTensorParallel(h Heads) []int64 {
	var out []int64
	for tp := int64(1); tp <= MaxGPUs; tp++ {
		if allowed(tp, h) {
			out = append(out, tp)
		}
	}
	return out
}

// Basis says in words which rule the valid TPs follow, for a plan's or the
// data source's output.
func (h Heads) Basis() string {
	var s string
	switch {
	case h.Attention > 0:
		s = fmt.Sprintf("divisors of the model's %d attention heads", h.Attention)
	default:
		s = "powers of two only: attention_heads is not given, and vLLM and SGLang refuse a tensor parallelism that does not divide the heads " +
			"(almost every model's head count is a power of two or a small multiple of one, rarely divisible by 3, 5 or 7); " +
			"give attention_heads and kv_heads to allow every divisor of the heads"
	}
	if h.KV > 0 {
		s += fmt.Sprintf(" that divide or are a multiple of its %d KV heads", h.KV)
	}
	return s
}

// ChooseTensorParallel is the smallest valid TP of at least minGPUs that is
// at most one node or a whole number of nodes of gpusPerNode GPUs; 0 when
// none up to MaxGPUs is.
func ChooseTensorParallel(minGPUs, gpusPerNode int64, h Heads) int64 {
	for tp := max(minGPUs, 1); tp <= MaxGPUs; tp++ {
		if _, _, ok := Placement(tp, gpusPerNode); ok && allowed(tp, h) {
			return tp
		}
	}
	return 0
}

func joinInts(v []int64) string {
	if len(v) == 0 {
		return "none up to 64"
	}
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

// FitInput is one replica's memory question.
type FitInput struct {
	WeightsBytes   int64
	TensorParallel int64
	// KVBytesPerRequest is one request's KV cache at the configured context
	// length (kv bytes per token × context length); 0 when unknown, and then
	// only the weights and the overhead are checked.
	KVBytesPerRequest int64
	GPUMemoryBytes    int64
	ReserveFraction   float64
	// OverheadBytes per GPU; see DefaultOverheadBytes.
	OverheadBytes int64
}

// FitResult holds the numbers of the rule, for a plan's diagnostic.
type FitResult struct {
	UsableBytesPerGPU int64
	WeightsPerGPU     int64
	KVPerGPU          int64 // one request's share
	OverheadBytes     int64
	NeedBytesPerGPU   int64
	Fits              bool
	MaxConcurrency    int64 // 0 without a KV size
	TensorParallel    int64
	GPUMemoryBytes    int64
	ReserveFraction   float64
	KVBytesPerRequest int64
	WeightsBytesTotal int64
	MinTensorParallel int64 // smallest TP that fits (ignoring heads); 0 when none ≤ 64 does
}

// Fit applies the fit rule; an error means invalid input, not a misfit.
func Fit(in FitInput) (FitResult, error) {
	r := FitResult{TensorParallel: in.TensorParallel, GPUMemoryBytes: in.GPUMemoryBytes, ReserveFraction: in.ReserveFraction,
		KVBytesPerRequest: in.KVBytesPerRequest, WeightsBytesTotal: in.WeightsBytes, OverheadBytes: in.OverheadBytes}
	switch {
	case in.WeightsBytes < 1:
		return r, fmt.Errorf("weights must be at least 1 byte, got %d", in.WeightsBytes)
	case in.TensorParallel < 1 || in.TensorParallel > MaxGPUs:
		return r, fmt.Errorf("tensor_parallel must be between 1 and %d, got %d", MaxGPUs, in.TensorParallel)
	case in.KVBytesPerRequest < 0:
		return r, fmt.Errorf("KV cache per request must not be negative, got %d", in.KVBytesPerRequest)
	case in.OverheadBytes < 0:
		return r, fmt.Errorf("overhead must not be negative, got %d", in.OverheadBytes)
	}
	usable, err := UsablePerGPU(in.GPUMemoryBytes, in.ReserveFraction)
	if err != nil {
		return r, err
	}
	r.UsableBytesPerGPU = usable
	r.WeightsPerGPU, r.KVPerGPU = ceilDiv(in.WeightsBytes, in.TensorParallel), ceilDiv(in.KVBytesPerRequest, in.TensorParallel)
	r.NeedBytesPerGPU = r.WeightsPerGPU + r.KVPerGPU + in.OverheadBytes
	r.Fits = r.NeedBytesPerGPU <= usable
	if in.KVBytesPerRequest > 0 {
		if free := usable - r.WeightsPerGPU - in.OverheadBytes; free > 0 {
			r.MaxConcurrency = free * in.TensorParallel / in.KVBytesPerRequest
		}
	}
	for tp := int64(1); tp <= MaxGPUs; tp++ {
		if ceilDiv(in.WeightsBytes, tp)+ceilDiv(in.KVBytesPerRequest, tp)+in.OverheadBytes <= usable {
			r.MinTensorParallel = tp
			break
		}
	}
	return r, nil
}

// Explain spells the arithmetic, e.g. for a plan that refuses a misfit:
// "weights 140 GB ÷ tensor_parallel 1 = 140 GB + KV cache of one request
// 1.07 GB ÷ 1 = 1.07 GB + overhead 1.07 GB = 142.15 GB per GPU, but an 80 GB
// GPU holds 72 GB after the 0.1 reserve".
func (r FitResult) Explain() string {
	s := fmt.Sprintf("weights %s ÷ tensor_parallel %d = %s", GB(r.WeightsBytesTotal), r.TensorParallel, GB(r.WeightsPerGPU))
	if r.KVBytesPerRequest > 0 {
		s += fmt.Sprintf(" + KV cache of one request %s ÷ %d = %s", GB(r.KVBytesPerRequest), r.TensorParallel, GB(r.KVPerGPU))
	}
	s += fmt.Sprintf(" + overhead %s = %s per GPU", GB(r.OverheadBytes), GB(r.NeedBytesPerGPU))
	verb := "and"
	if !r.Fits {
		verb = "but"
	}
	s += fmt.Sprintf(", %s a %s GPU holds %s after the %v reserve", verb, GB(r.GPUMemoryBytes), GB(r.UsableBytesPerGPU), r.ReserveFraction)
	if r.Fits && r.KVBytesPerRequest > 0 {
		s += fmt.Sprintf(" (%d requests at once)", r.MaxConcurrency)
	}
	return s
}

// Hint says what would fit when r does not.
func (r FitResult) Hint() string {
	if r.MinTensorParallel == 0 {
		return fmt.Sprintf("not even %d GPUs hold it: use a smaller dtype, a shorter context or larger GPUs", MaxGPUs)
	}
	return fmt.Sprintf("at least %d GPUs (tensor_parallel %d, or the next value the model's heads allow) would fit, or a smaller dtype or shorter context",
		r.MinTensorParallel, r.MinTensorParallel)
}

// Err is nil when r fits, else the arithmetic and a hint.
func (r FitResult) Err() error {
	if r.Fits {
		return nil
	}
	return fmt.Errorf("%s; %s", r.Explain(), r.Hint())
}

// KVBytesPerToken is a decoder's KV cache per token: keys and values of
// every layer: 2 × layers × kv_heads × head_dim × bytes per element.
func KVBytesPerToken(layers, kvHeads, headDim int64, dtype string) (int64, error) {
	b, ok := bytesPerParam[dtype]
	if !ok {
		return 0, fmt.Errorf("dtype %q is not one of %s", dtype, strings.Join(DTypes(), ", "))
	}
	if layers < 1 || kvHeads < 1 || headDim < 1 {
		return 0, fmt.Errorf("layers, kv_heads and head_dim must be positive, got %d, %d, %d", layers, kvHeads, headDim)
	}
	return int64(float64(2*layers*kvHeads*headDim) * b), nil
}

// Placement splits tp GPUs over nodes of gpusPerNode GPUs: one node when
// tp ≤ gpusPerNode, else tp ÷ gpusPerNode whole nodes; ok is false when tp
// is more than a node and not a whole number of nodes (a replica's pods are
// equal, and a part of a node left over is rarely schedulable for serving).
func Placement(tp, gpusPerNode int64) (nodes, perPod int64, ok bool) {
	if gpusPerNode < 1 || tp < 1 {
		return 0, 0, false
	}
	if tp <= gpusPerNode {
		return 1, tp, true
	}
	if tp%gpusPerNode != 0 {
		return 0, 0, false
	}
	return tp / gpusPerNode, gpusPerNode, true
}

func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}
