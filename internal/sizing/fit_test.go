package sizing

import (
	"slices"
	"strings"
	"testing"
)

func TestCheckTensorParallel(t *testing.T) {
	for _, tc := range []struct {
		tp    int64
		heads Heads
		err   string
		note  string
	}{
		{tp: 8, heads: Heads{}}, // unknown heads, a power of two: no note
		{tp: 6, heads: Heads{}, note: "tensor_parallel 6 is not a power of two and the model's attention heads are not given"}, // the server judges, the plan says so
		{tp: 3, heads: Heads{}, note: "almost no model's heads divide by 3"},
		{tp: 12, heads: Heads{KV: 4}, note: "divide by 3"},                            // KV heads allow 12 (multiple of 4), attention heads unknown
		{tp: 6, heads: Heads{Attention: 48}},                                          // not a power of two, and vLLM accepts it
		{tp: 7, heads: Heads{Attention: 28}},                                          // 28 heads: 1, 2, 4, 7, 14, 28
		{tp: 4, heads: Heads{Attention: 28, KV: 4}},                                   // Qwen2-7B: 28 heads, 4 KV heads
		{tp: 7, heads: Heads{Attention: 28, KV: 4}, err: "valid values: 1, 2, 4, 28"}, // 7 KV shards of 4 heads: vLLM's replication needs 4 | 7
		{tp: 8, heads: Heads{Attention: 64, KV: 8}},                                   // Llama 3 70B
		{tp: 16, heads: Heads{Attention: 64, KV: 8}},                                  // KV heads replicated: 16 is a multiple of 8
		{tp: 6, heads: Heads{Attention: 40}, err: "tensor_parallel 6 does not divide the model's 40 attention heads (vLLM and SGLang shard heads evenly); valid values: 1, 2, 4, 5, 8, 10, 20, 40"},
		{tp: 8, heads: Heads{Attention: 28}, err: "valid values: 1, 2, 4, 7, 14, 28"},
		{tp: 3, heads: Heads{Attention: 48, KV: 8}, err: "tensor_parallel 3 neither divides the model's 8 KV heads nor is a multiple of them"},
		{tp: 12, heads: Heads{Attention: 48, KV: 8}, err: "valid values: 1, 2, 4, 8, 16, 24, 48"},
		{tp: 3, heads: Heads{KV: 8}, err: "tensor_parallel 3 neither divides the model's 8 KV heads"},
		{tp: 0, err: "between 1 and 64, got 0"},
		{tp: 65, err: "between 1 and 64, got 65"},
		{tp: 2, heads: Heads{Attention: -1}, err: "must not be negative"},
	} {
		note, err := CheckTensorParallel(tc.tp, tc.heads)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("CheckTensorParallel(%d, %+v) = %v, want %q", tc.tp, tc.heads, err, tc.err)
		}
		if tc.note == "" && note != "" || tc.note != "" && !strings.Contains(note, tc.note) {
			t.Errorf("CheckTensorParallel(%d, %+v) note %q, want %q", tc.tp, tc.heads, note, tc.note)
		}
	}
}

func TestValidTensorParallel(t *testing.T) {
	for _, tc := range []struct {
		heads Heads
		want  []int64
	}{
		{Heads{}, []int64{1, 2, 4, 8, 16, 32, 64}},      // unknown heads: powers of two
		{Heads{KV: 8}, []int64{1, 2, 4, 8, 16, 32, 64}}, // KV heads alone: still powers of two
		{Heads{KV: 6}, []int64{1, 2}},                   // powers of two that divide 6 (none is a multiple of it)
		{Heads{Attention: 64, KV: 8}, []int64{1, 2, 4, 8, 16, 32, 64}},
		{Heads{Attention: 40, KV: 40}, []int64{1, 2, 4, 5, 8, 10, 20, 40}},
		{Heads{Attention: 48, KV: 6}, []int64{1, 2, 3, 6, 12, 24, 48}},
	} {
		if got := ValidTensorParallel(tc.heads); !slices.Equal(got, tc.want) {
			t.Errorf("ValidTensorParallel(%+v) = %v, want %v", tc.heads, got, tc.want)
		}
	}
}

// The issue-28 cases: the tensor parallelism the sizing picks for 70B, 8B
// and 671B models with and without their head counts. The shapes:
// Llama 3 70B (64 attention heads, 8 KV heads), Llama 3 8B (32, 8),
// DeepSeek-V3 671B (128 attention heads; MLA, whose config.json says
// num_key_value_heads = 128, so KV heads 128), and Llama 2 13B (40, 40) for
// a model whose valid TPs are not all powers of two.
func TestChooseTensorParallel(t *testing.T) {
	const gb80 = 80_000_000_000
	llama70, llama8, deepseek, llama13 := Heads{Attention: 64, KV: 8}, Heads{Attention: 32, KV: 8}, Heads{Attention: 128, KV: 128}, Heads{Attention: 40, KV: 40}
	// KV cache per request: 2 × layers × KV heads × head_dim × 2 B (bf16) × tokens.
	kv70, _ := KVBytesPerToken(80, 8, 128, "bf16") // 327,680 B per token
	kv8, _ := KVBytesPerToken(32, 8, 128, "bf16")  // 131,072 B per token
	for _, tc := range []struct {
		name      string
		in        Input
		heads     Heads
		minGPUs   int64
		tpUnknown int64 // heads not given
		tpKnown   int64 // heads given
	}{
		// 70 + 2.68 ÷ 2 + 1.07 = 72.42 GB > 72 on 2 GPUs: 3 GPUs fit. 3 divides
		// no real model's heads (not 64): 4 either way — 3 was the old answer
		// without heads, which vLLM refuses.
		{name: "70B bf16, 8k context, 80 GB", in: Input{ParamsBillion: 70, DType: "bf16", GPUMemoryBytes: gb80, GPUsPerNode: 8, ReserveFraction: 0.1,
			KVCacheBytesPerRequest: kv70 * 8192, OverheadBytes: DefaultOverheadBytes}, heads: llama70, minGPUs: 3, tpUnknown: 4, tpKnown: 4},
		// 140 GB on 48 GB cards (43.2 usable): 140 ÷ 3 + 2.68 ÷ 3 + 1.07 = 48.6 > 43.2; 4 GPUs: 37.6. So 4.
		{name: "70B bf16 on 48 GB cards", in: Input{ParamsBillion: 70, DType: "bf16", GPUMemoryBytes: 48e9, GPUsPerNode: 8, ReserveFraction: 0.1,
			KVCacheBytesPerRequest: kv70 * 8192, OverheadBytes: DefaultOverheadBytes}, heads: llama70, minGPUs: 4, tpUnknown: 4, tpKnown: 4},
		// 70B fp16 with no KV, 3 GB overhead: 2 GPUs need 73 GB > 72, 3 fit; 4 either way.
		{name: "70B fp16, 3 GB overhead", in: Input{ParamsBillion: 70, DType: "fp16", GPUMemoryBytes: gb80, GPUsPerNode: 8, ReserveFraction: 0.1,
			OverheadBytes: 3e9}, heads: llama70, minGPUs: 3, tpUnknown: 4, tpKnown: 4},
		// 16 GB + 4.29 GB of KV (32k tokens) on 12 GB cards (10.8 usable):
		// 20.29 ÷ n + 1.07 ≤ 10.8 from n = 3; 4 either way.
		{name: "8B bf16, 32k context, 12 GB cards", in: Input{ParamsBillion: 8, DType: "bf16", GPUMemoryBytes: 12e9, GPUsPerNode: 4, ReserveFraction: 0.1,
			KVCacheBytesPerRequest: kv8 * 32768, OverheadBytes: DefaultOverheadBytes}, heads: llama8, minGPUs: 3, tpUnknown: 4, tpKnown: 4},
		{name: "8B bf16 on one 24 GB card", in: Input{ParamsBillion: 8, DType: "bf16", GPUMemoryBytes: 24e9, GPUsPerNode: 4, ReserveFraction: 0.1,
			KVCacheBytesPerRequest: kv8 * 8192, OverheadBytes: DefaultOverheadBytes}, heads: llama8, minGPUs: 1, tpUnknown: 1, tpKnown: 1},
		// 671 GB ÷ (72 − 1.07) GB = 9.5 → 10 GPUs; 10 is not whole 8-GPU nodes: 16 either way.
		{name: "671B fp8 on 8 × 80 GB nodes", in: Input{ParamsBillion: 671, DType: "fp8", GPUMemoryBytes: gb80, GPUsPerNode: 8, ReserveFraction: 0.1,
			OverheadBytes: DefaultOverheadBytes}, heads: deepseek, minGPUs: 10, tpUnknown: 16, tpKnown: 16},
		// 671 GB on H200s (126.9 GB usable): 6 GPUs hold it; 6 divides neither
		// 128 heads nor is a power of two: 8, one node, either way.
		{name: "671B fp8 on 8 × H200", in: Input{ParamsBillion: 671, DType: "fp8", GPUMemoryBytes: 141e9, GPUsPerNode: 8, ReserveFraction: 0.1,
			OverheadBytes: DefaultOverheadBytes}, heads: deepseek, minGPUs: 6, tpUnknown: 8, tpKnown: 8},
		// 1,342 GB bf16 on 80 GB cards: 1,342 ÷ 70.93 = 18.9 → 19 GPUs; 24 is whole nodes but no power
		// of two and does not divide 128: 32 either way.
		{name: "671B bf16 on 8 × 80 GB nodes", in: Input{ParamsBillion: 671, DType: "bf16", GPUMemoryBytes: gb80, GPUsPerNode: 8, ReserveFraction: 0.1,
			OverheadBytes: DefaultOverheadBytes}, heads: deepseek, minGPUs: 19, tpUnknown: 32, tpKnown: 32},
		// Where the heads matter: 26 GB (13B fp16) on 8 GB cards (7.2 usable,
		// no overhead): 4 GPUs hold 6.5 GB each, so 4 either way; with 1 GB
		// of overhead 5 GPUs — 5 divides 40 heads, but without them 8.
		{name: "13B fp16 on 8 GB cards, heads allow 5", in: Input{ParamsBillion: 13, DType: "fp16", GPUMemoryBytes: 8e9, GPUsPerNode: 8, ReserveFraction: 0.1,
			OverheadBytes: 1e9}, heads: llama13, minGPUs: 5, tpUnknown: 8, tpKnown: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, known := range []bool{false, true} {
				in, want := tc.in, tc.tpUnknown
				if known {
					in.Heads, want = tc.heads, tc.tpKnown
				}
				r, err := Size(in)
				if err != nil {
					t.Fatalf("heads %+v: %v", in.Heads, err)
				}
				if r.MinGPUs != tc.minGPUs || r.TensorParallel != want {
					t.Errorf("heads %+v: min_gpus %d, tensor_parallel %d; want %d, %d", in.Heads, r.MinGPUs, r.TensorParallel, tc.minGPUs, want)
				}
				if note, err := CheckTensorParallel(r.TensorParallel, in.Heads); err != nil || note != "" {
					t.Errorf("heads %+v: the chosen %d fails the check: %q, %v", in.Heads, r.TensorParallel, note, err)
				}
				if h := in.Heads; h.Attention > 0 && h.Attention%r.TensorParallel != 0 || h.KV > 0 && h.KV%r.TensorParallel != 0 && r.TensorParallel%h.KV != 0 {
					t.Errorf("heads %+v: tensor_parallel %d does not suit them", h, r.TensorParallel)
				}
				if !known && (r.TensorParallel&(r.TensorParallel-1) != 0 || !strings.Contains(r.TensorParallelBasis, "powers of two only: attention_heads is not given")) {
					t.Errorf("without heads: tensor_parallel %d, basis %q", r.TensorParallel, r.TensorParallelBasis)
				}
				if known && !strings.Contains(r.TensorParallelBasis, "divisors of the model's") {
					t.Errorf("with heads: basis %q", r.TensorParallelBasis)
				}
			}
		})
	}
}

func TestChooseTensorParallelNone(t *testing.T) {
	// On 6-GPU nodes a replica of more than a node is 12, 18, … GPUs: no
	// power of two, so without the heads there is none, and the error says
	// what to give.
	_, err := Size(Input{ModelBytes: 500e9, GPUMemoryBytes: 80e9, GPUsPerNode: 6, ReserveFraction: 0.1})
	if err == nil || !strings.Contains(err.Error(), "no tensor parallelism from 7 to 64 is both valid for the model (powers of two only: attention_heads is not given") ||
		!strings.Contains(err.Error(), "whole nodes of 6 GPUs") {
		t.Errorf("err = %v", err)
	}
	if tp := ChooseTensorParallel(7, 6, Heads{Attention: 96, KV: 12}); tp != 12 {
		t.Errorf("96 heads, 12 KV heads on 6-GPU nodes from 7: %d, want 12", tp)
	}
	if tp := ChooseTensorParallel(7, 6, Heads{Attention: 96, KV: 8}); tp != 24 {
		t.Errorf("96 heads, 8 KV heads on 6-GPU nodes from 7: %d, want 24 (12 neither divides 8 KV heads nor is a multiple of them)", tp)
	}
}

func TestFit(t *testing.T) {
	// 8B in bf16 (16 GB) on one 24 GB card, 0.1 reserve (21.6 GB), 1 GiB
	// overhead, 128 KiB of KV per token (Llama 3 8B: 2 × 32 layers × 8 KV
	// heads × 128 × 2 B) at 32,768 tokens = 4 GiB per request.
	kv, err := KVBytesPerToken(32, 8, 128, "bf16")
	if err != nil || kv != 131072 {
		t.Fatalf("KVBytesPerToken = %d, %v; want 131072", kv, err)
	}
	r, err := Fit(FitInput{WeightsBytes: 16e9, TensorParallel: 1, KVBytesPerRequest: kv * 32768, GPUMemoryBytes: 24e9,
		ReserveFraction: 0.1, OverheadBytes: DefaultOverheadBytes})
	if err != nil {
		t.Fatal(err)
	}
	// need = 16 + 4.29 + 1.07 = 21.37 GB ≤ 21.6; (21.6 − 16 − 1.07) ÷ 4.29 = 1.05 → 1.
	if !r.Fits || r.NeedBytesPerGPU != 16e9+(1<<32)+(1<<30) || r.MaxConcurrency != 1 || r.MinTensorParallel != 1 {
		t.Fatalf("%+v", r)
	}
	if got, want := r.Explain(), "weights 16 GB ÷ tensor_parallel 1 = 16 GB + KV cache of one request 4.29 GB ÷ 1 = 4.29 GB + overhead 1.07 GB = 21.37 GB per GPU, and a 24 GB GPU holds 21.6 GB after the 0.1 reserve (1 requests at once)"; got != want {
		t.Errorf("Explain:\n got %s\nwant %s", got, want)
	}
	// Twice the context: 8.59 GB of KV no longer fits one card; 2 would.
	r, _ = Fit(FitInput{WeightsBytes: 16e9, TensorParallel: 1, KVBytesPerRequest: kv * 65536, GPUMemoryBytes: 24e9,
		ReserveFraction: 0.1, OverheadBytes: DefaultOverheadBytes})
	if r.Fits || r.MaxConcurrency != 0 || r.MinTensorParallel != 2 {
		t.Fatalf("%+v", r)
	}
	if got := r.Err(); got == nil || !strings.Contains(got.Error(), "= 25.66 GB per GPU, but a 24 GB GPU holds 21.6 GB after the 0.1 reserve; at least 2 GPUs") {
		t.Errorf("Err = %v", got)
	}
	for _, bad := range []FitInput{
		{WeightsBytes: 0, TensorParallel: 1, GPUMemoryBytes: 1},
		{WeightsBytes: 1, TensorParallel: 0, GPUMemoryBytes: 1},
		{WeightsBytes: 1, TensorParallel: 1, GPUMemoryBytes: 0},
		{WeightsBytes: 1, TensorParallel: 1, GPUMemoryBytes: 1, KVBytesPerRequest: -1},
		{WeightsBytes: 1, TensorParallel: 1, GPUMemoryBytes: 1, OverheadBytes: -1},
		{WeightsBytes: 1, TensorParallel: 1, GPUMemoryBytes: 1, ReserveFraction: 1},
	} {
		if _, err := Fit(bad); err == nil {
			t.Errorf("Fit(%+v) accepted", bad)
		}
	}
}

func TestPlacement(t *testing.T) {
	for _, tc := range []struct{ tp, gpn, nodes, per int64 }{
		{1, 8, 1, 1}, {6, 8, 1, 6}, {8, 8, 1, 8}, {16, 8, 2, 8}, {12, 6, 2, 6}, {10, 8, 0, 0}, {3, 0, 0, 0},
	} {
		n, p, ok := Placement(tc.tp, tc.gpn)
		if n != tc.nodes || p != tc.per || ok != (tc.nodes > 0) {
			t.Errorf("Placement(%d, %d) = %d, %d, %v", tc.tp, tc.gpn, n, p, ok)
		}
	}
}

// FuzzSize checks the rules' promises on any input: a sized replica fits
// with at least one request, its tensor parallelism passes the shared rule
// and its placement, no smaller valid tensor parallelism fits, and a
// refusal names the numbers.
func FuzzSize(f *testing.F) {
	f.Add(int64(140e9), int64(80e9), int64(8), int64(1<<30), int64(1<<30), int64(64), int64(8), 0.1)
	f.Add(int64(671e9), int64(80e9), int64(8), int64(0), int64(0), int64(128), int64(0), 0.1)
	f.Add(int64(400e9), int64(80e9), int64(6), int64(5e9), int64(0), int64(48), int64(6), 0.0)
	f.Fuzz(func(t *testing.T, weights, gpu, gpn, kv, overhead, heads, kvHeads int64, reserve float64) {
		if weights < 1 || weights > 1e13 || gpu < 1 || gpu > 1e12 || gpn < 1 || gpn > 16 || kv < 0 || kv > 1e12 ||
			overhead < 0 || overhead > 1e11 || heads < 0 || heads > 256 || kvHeads < 0 || kvHeads > 256 || !(reserve >= 0 && reserve < 1) {
			t.Skip()
		}
		h := Heads{Attention: heads, KV: kvHeads}
		r, err := Size(Input{ModelBytes: weights, GPUMemoryBytes: gpu, GPUsPerNode: gpn, KVCacheBytesPerRequest: kv,
			OverheadBytes: overhead, ReserveFraction: reserve, Heads: h})
		if err != nil {
			if !strings.Contains(err.Error(), " GB") && !strings.Contains(err.Error(), "GPU memory") && !strings.Contains(err.Error(), "nothing of a") {
				t.Fatalf("refusal without numbers: %v", err)
			}
			return
		}
		if note, err := CheckTensorParallel(r.TensorParallel, h); err != nil || note != "" {
			t.Fatalf("chosen tensor_parallel %d breaks the rule: %v %s", r.TensorParallel, err, note)
		}
		if !r.Fit.Fits || r.TensorParallel < r.MinGPUs {
			t.Fatalf("chosen %d does not fit: %+v", r.TensorParallel, r.Fit)
		}
		if kv > 0 && *r.MaxConcurrencyPerReplica < 1 {
			t.Fatalf("a sized replica serves no request: %+v", r.Fit)
		}
		if n, p, ok := Placement(r.TensorParallel, gpn); !ok || n*p != r.TensorParallel || n != r.NodesPerReplica {
			t.Fatalf("placement %d × %d of %d", n, p, r.TensorParallel)
		}
		for tp := int64(1); tp < r.TensorParallel; tp++ {
			f, _ := Fit(FitInput{WeightsBytes: weights, TensorParallel: tp, KVBytesPerRequest: kv, GPUMemoryBytes: gpu, ReserveFraction: reserve, OverheadBytes: overhead})
			_, _, placed := Placement(tp, gpn)
			if note, err := CheckTensorParallel(tp, h); f.Fits && placed && err == nil && note == "" {
				t.Fatalf("smaller tensor_parallel %d also fits and is valid", tp)
			}
		}
		if !slices.Contains(ValidTensorParallel(h), r.TensorParallel) {
			t.Fatalf("%d not among the valid values", r.TensorParallel)
		}
	})
}
