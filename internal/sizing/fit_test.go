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
	}{
		{tp: 6, heads: Heads{}},                                                       // unknown heads: the server judges
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
		{tp: 0, err: "between 1 and 64, got 0"},
		{tp: 65, err: "between 1 and 64, got 65"},
		{tp: 2, heads: Heads{Attention: -1}, err: "must not be negative"},
	} {
		err := CheckTensorParallel(tc.tp, tc.heads)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("CheckTensorParallel(%d, %+v) = %v, want %q", tc.tp, tc.heads, err, tc.err)
		}
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
		if err := CheckTensorParallel(r.TensorParallel, h); err != nil {
			t.Fatalf("chosen tensor_parallel %d breaks the rule: %v", r.TensorParallel, err)
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
			if f.Fits && placed && CheckTensorParallel(tp, h) == nil {
				t.Fatalf("smaller tensor_parallel %d also fits and is valid", tp)
			}
		}
		if heads > 0 && !slices.Contains(ValidTensorParallel(h), r.TensorParallel) {
			t.Fatalf("%d not among the valid values", r.TensorParallel)
		}
	})
}
