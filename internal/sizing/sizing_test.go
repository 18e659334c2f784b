package sizing

import (
	"strings"
	"testing"
)

func TestSize(t *testing.T) {
	const (
		gb80  = 80_000_000_000 // "80G"
		gi80  = 80 << 30       // "80Gi"
		h100  = 81559 << 20    // nvidia.com/gpu.memory=81559 (MiB)
		gb141 = 141_000_000_000
	)
	i := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name string
		in   Input
		want Result
		err  string
	}{
		// The classic cases of issue #5.
		{
			// 70 × 10^9 × 2 B = 140 GB; 80 GB × 0.9 = 72 GB per card; 2 × 72 = 144 ≥ 140.
			name: "70B fp16 on 80 GB cards: 2 GPUs, one node, no LWS",
			in:   Input{ParamsBillion: 70, DType: "fp16", GPUMemoryBytes: gb80, GPUsPerNode: 8, ReserveFraction: 0.1},
			want: Result{WeightsBytes: 140e9, UsableBytesPerGPU: 72e9, MinGPUs: 2, TensorParallel: 2, NodesPerReplica: 1, GPUsPerPod: 2, ReplicasPerNode: 4},
		},
		{
			// 671 GB ÷ 72 GB = 9.3 → 10 GPUs; 10 is more than a node and not
			// whole nodes, 16 is (and divides DeepSeek-V3's 128 heads).
			name: "671B fp8 on 8 × 80 GB nodes: 2 nodes × 8 GPUs with LWS",
			in:   Input{ParamsBillion: 671, DType: "fp8", GPUMemoryBytes: gb80, GPUsPerNode: 8, ReserveFraction: 0.1, Heads: Heads{Attention: 128}},
			want: Result{WeightsBytes: 671e9, UsableBytesPerGPU: 72e9, MinGPUs: 10, TensorParallel: 16, NodesPerReplica: 2, GPUsPerPod: 8, NeedsLWS: true},
		},
		{
			// 80Gi × 0.9 = 77.31 GB; 8 × 77.31 = 618 < 671 → 9 GPUs → 16.
			name: "671B fp8 on 80Gi cards: still 2 nodes",
			in:   Input{ParamsBillion: 671, DType: "fp8", GPUMemoryBytes: gi80, GPUsPerNode: 8, ReserveFraction: 0.1},
			want: Result{WeightsBytes: 671e9, UsableBytesPerGPU: 77309411328, MinGPUs: 9, TensorParallel: 16, NodesPerReplica: 2, GPUsPerPod: 8, NeedsLWS: true},
		},
		{
			// 1,342 GB ÷ 72 GB = 18.6 → 19 GPUs; whole nodes: 24, but 24
			// does not divide 128 heads: 32 GPUs = 4 nodes.
			name: "671B bf16 on 8 × 80 GB nodes: 4 nodes × 8 GPUs",
			in:   Input{ParamsBillion: 671, DType: "bf16", GPUMemoryBytes: gb80, GPUsPerNode: 8, ReserveFraction: 0.1, Heads: Heads{Attention: 128}},
			want: Result{WeightsBytes: 1342e9, UsableBytesPerGPU: 72e9, MinGPUs: 19, TensorParallel: 32, NodesPerReplica: 4, GPUsPerPod: 8, NeedsLWS: true},
		},
		{
			// 141 GB × 0.9 = 126.9 GB; 671 ÷ 126.9 = 5.3 → 6 GPUs, but 6
			// does not divide 128 heads: 8, one H200 node.
			name: "671B fp8 on an 8 × H200 node: one node",
			in:   Input{ParamsBillion: 671, DType: "fp8", GPUMemoryBytes: gb141, GPUsPerNode: 8, ReserveFraction: 0.1, Heads: Heads{Attention: 128}},
			want: Result{WeightsBytes: 671e9, UsableBytesPerGPU: 126.9e9, MinGPUs: 6, TensorParallel: 8, NodesPerReplica: 1, GPUsPerPod: 8, ReplicasPerNode: 1},
		},
		{
			// H100 label: 81559 MiB = 85,520,809,984 B, × 0.9 = 76.97 GB.
			name: "70B bf16 on the H100 label value, with KV cache",
			in: Input{ParamsBillion: 70, DType: "bf16", GPUMemoryBytes: h100, GPUsPerNode: 8, ReserveFraction: 0.1,
				KVCacheBytesPerRequest: 1 << 30},
			// (2 × 76,968,728,985 − 140e9) ÷ 2^30 = 13,937,457,970 ÷ 1,073,741,824 = 12.98 → 12.
			want: Result{WeightsBytes: 140e9, UsableBytesPerGPU: 76968728985, MinGPUs: 2, TensorParallel: 2, NodesPerReplica: 1, GPUsPerPod: 2, ReplicasPerNode: 4,
				MaxConcurrencyPerReplica: i(12)},
		},
		{
			// 8B fp16 = 16 GB fits one 24 GB card (21.6 usable): 5.6 GB left ÷ 0.5 GB = 11.
			name: "8B fp16 on a 24 GB card",
			in:   Input{ParamsBillion: 8, DType: "fp16", GPUMemoryBytes: 24e9, GPUsPerNode: 4, ReserveFraction: 0.1, KVCacheBytesPerRequest: 5e8},
			want: Result{WeightsBytes: 16e9, UsableBytesPerGPU: 21.6e9, MinGPUs: 1, TensorParallel: 1, NodesPerReplica: 1, GPUsPerPod: 1, ReplicasPerNode: 4, MaxConcurrencyPerReplica: i(11)},
		},
		{
			// The weights alone fit one card (20 ≤ 21.6) but not with one
			// request's 2 GB of KV cache: 2 GPUs.
			name: "room for one request",
			in:   Input{ModelBytes: 20e9, GPUMemoryBytes: 24e9, GPUsPerNode: 4, ReserveFraction: 0.1, KVCacheBytesPerRequest: 2e9},
			want: Result{WeightsBytes: 20e9, UsableBytesPerGPU: 21.6e9, MinGPUs: 2, TensorParallel: 2, NodesPerReplica: 1, GPUsPerPod: 2, ReplicasPerNode: 2, MaxConcurrencyPerReplica: i(11)},
		},
		{
			name: "int4 halves a byte",
			in:   Input{ParamsBillion: 70, DType: "int4", GPUMemoryBytes: gb80, GPUsPerNode: 8},
			want: Result{WeightsBytes: 35e9, UsableBytesPerGPU: 80e9, MinGPUs: 1, TensorParallel: 1, NodesPerReplica: 1, GPUsPerPod: 1, ReplicasPerNode: 8},
		},
		{
			// 500 ÷ 72 = 6.9 → 7 GPUs on 6-GPU nodes: whole nodes, 12 = 2 × 6,
			// which divides 96 heads (without heads no power of two is whole
			// 6-GPU nodes: TestChooseTensorParallelNone).
			name: "uneven nodes",
			in:   Input{ModelBytes: 500e9, GPUMemoryBytes: gb80, GPUsPerNode: 6, ReserveFraction: 0.1, Heads: Heads{Attention: 96}},
			want: Result{WeightsBytes: 500e9, UsableBytesPerGPU: 72e9, MinGPUs: 7, TensorParallel: 12, NodesPerReplica: 2, GPUsPerPod: 6, NeedsLWS: true},
		},
		{
			// No power of two: 6 GPUs hold it and 6 divides 48 heads.
			name: "six-way tensor parallelism",
			in:   Input{ModelBytes: 400e9, GPUMemoryBytes: gb80, GPUsPerNode: 8, ReserveFraction: 0.1, Heads: Heads{Attention: 48, KV: 8}},
			want: Result{WeightsBytes: 400e9, UsableBytesPerGPU: 72e9, MinGPUs: 6, TensorParallel: 8, NodesPerReplica: 1, GPUsPerPod: 8, ReplicasPerNode: 1},
		},
		{
			// 6 divides 48 attention heads and 6 KV heads.
			name: "six-way tensor parallelism accepted",
			in:   Input{ModelBytes: 400e9, GPUMemoryBytes: gb80, GPUsPerNode: 8, ReserveFraction: 0.1, Heads: Heads{Attention: 48, KV: 6}},
			want: Result{WeightsBytes: 400e9, UsableBytesPerGPU: 72e9, MinGPUs: 6, TensorParallel: 6, NodesPerReplica: 1, GPUsPerPod: 6, ReplicasPerNode: 1},
		},
		{
			// The overhead counts on every GPU: 140 ÷ 2 + 1.07 = 71.07 GB ≤ 72.
			name: "overhead per GPU",
			in:   Input{ParamsBillion: 70, DType: "fp16", GPUMemoryBytes: gb80, GPUsPerNode: 8, ReserveFraction: 0.1, OverheadBytes: DefaultOverheadBytes},
			want: Result{WeightsBytes: 140e9, UsableBytesPerGPU: 72e9, MinGPUs: 2, TensorParallel: 2, NodesPerReplica: 1, GPUsPerPod: 2, ReplicasPerNode: 4},
		},
		{
			// 140 ÷ 2 + 3 GB of overhead = 73 > 72: 3 GPUs, which divide 96 heads.
			name: "overhead tips it over",
			in:   Input{ParamsBillion: 70, DType: "fp16", GPUMemoryBytes: gb80, GPUsPerNode: 8, ReserveFraction: 0.1, OverheadBytes: 3e9, Heads: Heads{Attention: 96}},
			want: Result{WeightsBytes: 140e9, UsableBytesPerGPU: 72e9, MinGPUs: 3, TensorParallel: 3, NodesPerReplica: 1, GPUsPerPod: 3, ReplicasPerNode: 2},
		},
		{
			name: "exact fit with no reserve",
			in:   Input{ModelBytes: 160e9, GPUMemoryBytes: gb80, GPUsPerNode: 8},
			want: Result{WeightsBytes: 160e9, UsableBytesPerGPU: 80e9, MinGPUs: 2, TensorParallel: 2, NodesPerReplica: 1, GPUsPerPod: 2, ReplicasPerNode: 4},
		},
		{name: "more than 64 GPUs", in: Input{ParamsBillion: 4000, DType: "fp16", GPUMemoryBytes: gb80, GPUsPerNode: 8, ReserveFraction: 0.1},
			err: "8000 GB of weights do not fit 64 GPUs of 80 GB (72 GB usable each after the 0.1 reserve)"},
		{name: "both descriptions", in: Input{ModelBytes: 1, ParamsBillion: 1, DType: "fp16", GPUMemoryBytes: gb80, GPUsPerNode: 8}, err: "not both"},
		{name: "neither description", in: Input{GPUMemoryBytes: gb80, GPUsPerNode: 8}, err: "give model_bytes"},
		{name: "unknown dtype", in: Input{ParamsBillion: 1, DType: "fp4", GPUMemoryBytes: gb80, GPUsPerNode: 8}, err: `dtype "fp4" is not one of bf16, fp16, fp32, fp8, int4, int8`},
		{name: "dtype without params", in: Input{DType: "fp16", GPUMemoryBytes: gb80, GPUsPerNode: 8}, err: "params_billion must be a positive number"},
		{name: "reserve of 1", in: Input{ModelBytes: 1, GPUMemoryBytes: gb80, GPUsPerNode: 8, ReserveFraction: 1}, err: "reserve_fraction must be in [0, 1)"},
		{name: "no GPU memory", in: Input{ModelBytes: 1, GPUsPerNode: 8}, err: "GPU memory must be positive"},
		{name: "no GPUs per node", in: Input{ModelBytes: 1, GPUMemoryBytes: gb80}, err: "gpus_per_node must be at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Size(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want it to contain %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got.MaxConcurrencyPerReplica == nil) != (tc.want.MaxConcurrencyPerReplica == nil) ||
				got.MaxConcurrencyPerReplica != nil && *got.MaxConcurrencyPerReplica != *tc.want.MaxConcurrencyPerReplica {
				t.Errorf("max concurrency %v, want %v", deref(got.MaxConcurrencyPerReplica), deref(tc.want.MaxConcurrencyPerReplica))
			}
			got.MaxConcurrencyPerReplica, tc.want.MaxConcurrencyPerReplica = nil, nil
			if got.Fit.TensorParallel != got.TensorParallel || !got.Fit.Fits {
				t.Errorf("fit at the chosen tensor parallelism: %+v", got.Fit)
			}
			got.Fit = FitResult{}
			if got.TensorParallelBasis != tc.in.Heads.Basis() {
				t.Errorf("basis %q", got.TensorParallelBasis)
			}
			got.TensorParallelBasis = ""
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestParseGPUMemory(t *testing.T) {
	for in, want := range map[string]int64{"80G": 80e9, "80Gi": 80 << 30, "81559Mi": 81559 << 20, "80000000000": 80e9, "1.5Gi": 3 << 29} {
		got, err := ParseGPUMemory(in)
		if err != nil || got != want {
			t.Errorf("ParseGPUMemory(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "Gi", "80 GB", "-80Gi", "0", "1m"} {
		if _, err := ParseGPUMemory(bad); err == nil {
			t.Errorf("ParseGPUMemory(%q) accepted", bad)
		}
	}
}

func TestGPUMemoryFromLabel(t *testing.T) {
	if got, err := GPUMemoryFromLabel("81559"); err != nil || got != "81559Mi" {
		t.Errorf("got %q, %v", got, err)
	}
	for _, bad := range []string{"", "80GB", "-1", "0"} {
		if _, err := GPUMemoryFromLabel(bad); err == nil {
			t.Errorf("GPUMemoryFromLabel(%q) accepted", bad)
		}
	}
}

func TestGB(t *testing.T) {
	for b, want := range map[int64]string{140e9: "140 GB", 77309411328: "77.31 GB", 0: "0 GB", 5e8: "0.5 GB"} {
		if got := GB(b); got != want {
			t.Errorf("GB(%d) = %q, want %q", b, got, want)
		}
	}
}
