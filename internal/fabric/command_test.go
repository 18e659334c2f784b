package fabric

import (
	"reflect"
	"strings"
	"testing"
)

func TestTestArgs(t *testing.T) {
	got, err := Test{}.Args()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/opt/nccl_tests/build/all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "1", "-n", "20", "-w", "5", "-c", "1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults = %q\nwant %q", got, want)
	}
	off := false
	got, err = Test{Binary: "reduce_scatter_perf", BinaryDir: "/usr/local/bin", MinBytes: "1M", MaxBytes: "1G", StepFactor: 4,
		Iters: 100, Warmup: 10, Check: &off}.Args()
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"/usr/local/bin/reduce_scatter_perf", "-b", "1M", "-e", "1G", "-f", "4", "-g", "1", "-n", "100", "-w", "10", "-c", "0"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("custom = %q\nwant %q", got, want)
	}
}

func TestTestValidate(t *testing.T) {
	for _, tc := range []struct {
		test Test
		err  string
	}{
		{Test{Binary: "all_reduce"}, "binary must be one of"},
		{Test{Binary: "../all_reduce_perf"}, "binary must be one of"},
		{Test{BinaryDir: "build"}, "absolute path"},
		{Test{MinBytes: "8X"}, "min_bytes (-b)"},
		{Test{MaxBytes: "-1"}, "max_bytes (-e)"},
		{Test{MinBytes: "1G", MaxBytes: "1M"}, "at most max_bytes"},
		{Test{MinBytes: "0"}, "at least 1"},
		{Test{StepFactor: 1}, "step_factor (-f)"},
		{Test{GPUsPerRank: -1}, "(-g)"},
		{Test{Iters: -3}, "(-n)"},
		{Test{Warmup: -1}, "(-w)"},
		{Test{MaxBytes: "99999999999G"}, "too large"},
	} {
		err := tc.test.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: err = %v, want %q", tc.test, err, tc.err)
		}
	}
	for _, c := range Collectives {
		if err := (Test{Binary: c}).Validate(); err != nil {
			t.Errorf("%s refused: %v", c, err)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"8": 8, "1K": 1024, "128M": 128 << 20, "8G": 8 << 30} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "8g", "1.5G", "8GB", " 8"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
}

func TestMPIRunArgs(t *testing.T) {
	got, err := MPIRunArgs(Launch{Nodes: 2, GPUsPerNode: 8, Env: map[string]string{
		"NCCL_IB_HCA": "mlx5_0,mlx5_1", "NCCL_DEBUG": "INFO",
	}}, Test{})
	if err != nil {
		t.Fatal(err)
	}
	want := "mpirun --allow-run-as-root -np 16 --map-by ppr:8:node --bind-to none -x NCCL_DEBUG=INFO -x NCCL_IB_HCA=mlx5_0,mlx5_1 " +
		"/opt/nccl_tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 1 -n 20 -w 5 -c 1"
	if strings.Join(got, " ") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, " "), want)
	}
	// Two GPUs per rank: half the ranks.
	got, err = MPIRunArgs(Launch{Nodes: 4, GPUsPerNode: 8, MPIRun: "/usr/bin/mpirun"}, Test{GPUsPerRank: 2})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got[:6], " ") != "/usr/bin/mpirun --allow-run-as-root -np 16 --map-by ppr:4:node" {
		t.Errorf("got %q", got)
	}
	for _, tc := range []struct {
		l    Launch
		t    Test
		want string
	}{
		{Launch{Nodes: 0, GPUsPerNode: 8}, Test{}, "nodes must be at least 1"},
		{Launch{Nodes: 2, GPUsPerNode: 0}, Test{}, "gpus_per_node must be at least 1"},
		{Launch{Nodes: 2, GPUsPerNode: 6}, Test{GPUsPerRank: 4}, "multiple of the GPUs per rank"},
		{Launch{Nodes: 2, GPUsPerNode: 8, Env: map[string]string{"BAD-NAME": "1"}}, Test{}, "not valid"},
		{Launch{Nodes: 2, GPUsPerNode: 8}, Test{Binary: "nope"}, "binary must be one of"},
	} {
		if _, err := MPIRunArgs(tc.l, tc.t); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v %+v: err = %v, want %q", tc.l, tc.t, err, tc.want)
		}
	}
}
