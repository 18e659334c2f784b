package fabric

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func readLog(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "published", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readMade(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "made", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The published logs (sources in testdata/published/SOURCES.md).
func TestParsePublished(t *testing.T) {
	for _, tc := range []struct {
		file      string
		err       error // errors.Is target; nil for a complete log
		rows      int
		peak      float64
		peakAt    int64
		avg       float64
		avgSeen   bool
		oob       int64
		oobOK     bool
		wrong     int64
		transport Transport
		network   string
		devices   []string
		info      bool
		nccl      string
		tests     string
		coll      string
		hosts     []string
		check     func(t *testing.T, r *Result)
	}{
		{
			file: "socket_truncated_nccl2.25.1.log", err: ErrTruncated,
			transport: TransportSocket, network: "Socket", devices: []string{"eno2:10.42.0.2<0>"}, info: true,
			nccl: "2.25.1+cuda12.1", hosts: []string{"agzen-worker"},
			check: func(t *testing.T, r *Result) {
				if !r.Net.IBDisabled || r.Net.NetChannels != 8 || r.Net.GDR {
					t.Errorf("net = %+v, want IB disabled, 8 NET channels, no GDR", r.Net)
				}
				if r.Ranks[0].Rank != 1 || r.Ranks[0].Group != 0 || r.Ranks[0].PID != 475220 || r.Ranks[0].GPU != "NVIDIA GeForce RTX 4090" {
					t.Errorf("rank = %+v", r.Ranks[0])
				}
			},
		},
		{
			file: "roce_failed_nccl2.19.3.log", err: ErrNoTable,
			transport: TransportRoCE, network: "IB", devices: []string{"mlx5_10:1/RoCE", "mlx5_11:1/RoCE"}, info: true,
			nccl: "2.19.3+cuda12.3", hosts: []string{"dgxh100-3"},
			check: func(t *testing.T, r *Result) {
				if r.Ranks[0].Group != -1 || r.Ranks[0].BusID != "0xd1" {
					t.Errorf("old-style rank line read as %+v", r.Ranks[0])
				}
			},
		},
		{
			file: "ib_footer_nccl-tests119.log",
			rows: 6, peak: 96.69, peakAt: 132120584, avg: 84.8558, avgSeen: true, oobOK: true,
			check: func(t *testing.T, r *Result) {
				row := r.Rows[0]
				if row.Redop != "sum" || row.Root != -1 || row.Count != 31981570 || row.OutOfPlace.TimeUS != 2560.7 ||
					row.OutOfPlace.AlgBW != 49.96 || row.InPlace == nil || row.InPlace.BusBW != 95.92 {
					t.Errorf("first row = %+v (in-place %+v)", row, row.InPlace)
				}
			},
		},
		{
			file: "oob_failed_old_format.log",
			rows: 1, peak: 129.05, peakAt: 4294967296, avg: 128.942, avgSeen: true, oob: 2, wrong: 2,
			check: func(t *testing.T, r *Result) {
				row := r.Rows[0]
				if row.Redop != "" || row.Root != -1 || row.Type != "float" || row.OutOfPlace.MaxError != 1 || row.OutOfPlace.Wrong != 1 {
					t.Errorf("old-format row = %+v", row)
				}
			},
		},
		{
			file: "wrong_truncated_nccl-tests179.log", err: ErrTruncated,
			rows: 5, wrong: 4 + 4 + 8 + 6 + 16 + 12 + 30 + 24 + 54 + 52, info: true, peakAt: 0,
		},
		{
			file: "rccl_concluded_footer.log",
			rows: 4, peak: 361.17, peakAt: 17179869184, avg: 142.652, avgSeen: true, oobOK: true, coll: "all_reduce_perf",
		},
		{
			file: "alltoall_na_nccl-tests287.log",
			rows: 1, avgSeen: true, oobOK: true, hosts: []string{"GENOA-01"},
			check: func(t *testing.T, r *Result) {
				row := r.Rows[0]
				if row.Redop != "none" || row.OutOfPlace.Wrong != 0 || row.InPlace.Wrong != -1 || row.InPlace.AlgBW != 43046.10 {
					t.Errorf("row = %+v in-place %+v", row, row.InPlace)
				}
				if r.NGPUs != 1 || r.MinBytes != 33554432 || r.MaxBytes != 33554432 {
					t.Errorf("params = %d %d %d", r.NGPUs, r.MinBytes, r.MaxBytes)
				}
			},
		},
		{
			file: "roce_truncated_nccl-tests2.20.0.log", err: ErrTruncated,
			rows: 4, peak: 1.01, peakAt: 65536, tests: "2.20.0", nccl: "2.31.2", coll: "all_reduce_perf",
			hosts: []string{"spark-d708", "spark-dbf4"},
			check: func(t *testing.T, r *Result) {
				if r.NThread != 1 || r.NGPUs != 1 || r.MinBytes != 8192 || r.MaxBytes != 8589934592 {
					t.Errorf("params = %d %d %d %d", r.NThread, r.NGPUs, r.MinBytes, r.MaxBytes)
				}
				if len(r.Ranks) != 2 || r.Ranks[1].BusID != "000f:01:00" || r.Ranks[1].GPU != "NVIDIA GB10" {
					t.Errorf("ranks = %+v", r.Ranks)
				}
			},
		},
		{
			file: "mpirun_tagged_truncated.log", err: ErrTruncated,
			rows: 9, peak: 1.60, peakAt: 262144,
			check: func(t *testing.T, r *Result) {
				for _, row := range r.Rows {
					if row.Redop != "none" || row.InPlace == nil || row.InPlace.Wrong != -1 || row.OutOfPlace.Wrong != 0 {
						t.Errorf("row = %+v in-place %+v", row, row.InPlace)
					}
				}
			},
		},
		{
			file: "socket_broadcast_nccl2.9.6.log", err: ErrTruncated,
			rows: 1, transport: TransportSocket, nccl: "2.9.6+cuda11.2", hosts: []string{"v100-gpu-1", "v100-gpu-5"},
			check: func(t *testing.T, r *Result) {
				row := r.Rows[0]
				if row.Root != 0 || row.Redop != "" || row.OutOfPlace.Wrong != -1 || row.InPlace.Wrong != -1 {
					t.Errorf("broadcast row = %+v in-place %+v", row, row.InPlace)
				}
				if !r.Net.IBNoDevice || len(r.Warnings) != 2 {
					t.Errorf("IBNoDevice %v, warnings %q", r.Net.IBNoDevice, r.Warnings)
				}
			},
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r, err := Parse(readLog(t, tc.file))
			if tc.err == nil && err != nil || tc.err != nil && !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if r == nil {
				t.Fatal("nil result")
			}
			if tc.err == ErrTruncated && !strings.Contains(err.Error(), "truncated") {
				t.Errorf("error %q does not say truncated", err)
			}
			if len(r.Rows) != tc.rows {
				t.Errorf("rows = %d, want %d", len(r.Rows), tc.rows)
			}
			if r.MaxBusBW != tc.peak || tc.peakAt != 0 && r.MaxBusBWAtSize != tc.peakAt {
				t.Errorf("peak = %v at %d, want %v at %d", r.MaxBusBW, r.MaxBusBWAtSize, tc.peak, tc.peakAt)
			}
			if r.AvgBusBW != tc.avg || r.AvgBusBWSeen != tc.avgSeen {
				t.Errorf("avg = %v (%v), want %v (%v)", r.AvgBusBW, r.AvgBusBWSeen, tc.avg, tc.avgSeen)
			}
			if r.OutOfBounds != tc.oob || r.OutOfBoundsOK != tc.oobOK {
				t.Errorf("oob = %d ok=%v, want %d ok=%v", r.OutOfBounds, r.OutOfBoundsOK, tc.oob, tc.oobOK)
			}
			if r.WrongTotal != tc.wrong {
				t.Errorf("wrong = %d, want %d", r.WrongTotal, tc.wrong)
			}
			if r.Net.Transport != tc.transport || r.Net.Network != tc.network {
				t.Errorf("transport = %q network %q, want %q %q", r.Net.Transport, r.Net.Network, tc.transport, tc.network)
			}
			if tc.devices != nil && !reflect.DeepEqual(r.Net.Devices, tc.devices) {
				t.Errorf("devices = %q, want %q", r.Net.Devices, tc.devices)
			}
			if r.Net.DebugInfo != tc.info {
				t.Errorf("DebugInfo = %v, want %v", r.Net.DebugInfo, tc.info)
			}
			if r.NCCLVersion != tc.nccl || r.TestsVersion != tc.tests || r.Collective != tc.coll {
				t.Errorf("versions = nccl %q tests %q coll %q, want %q %q %q", r.NCCLVersion, r.TestsVersion, r.Collective, tc.nccl, tc.tests, tc.coll)
			}
			if tc.hosts != nil && !reflect.DeepEqual(r.Hosts, tc.hosts) {
				t.Errorf("hosts = %q, want %q", r.Hosts, tc.hosts)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// A launcher that runs a short correctness pass and then a soak writes two
// tables into one log: the counts add up, and a second table without its
// footer makes the whole log truncated.
func TestParseSeveralRuns(t *testing.T) {
	r, err := Parse(readLog(t, "oob_failed_old_format.log") + readLog(t, "ib_footer_nccl-tests119.log"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Runs != 2 || r.OutOfBounds != 2 || r.OutOfBoundsOK || len(r.Rows) != 7 || r.AvgBusBW != 84.8558 || r.MaxBusBW != 129.05 {
		t.Errorf("runs %d oob %d ok %v rows %d avg %v max %v", r.Runs, r.OutOfBounds, r.OutOfBoundsOK, len(r.Rows), r.AvgBusBW, r.MaxBusBW)
	}
	r, err = Parse(readLog(t, "ib_footer_nccl-tests119.log") + readLog(t, "oob_failed_old_format.log"))
	if err != nil || r.OutOfBoundsOK || r.OutOfBounds != 2 {
		t.Errorf("err %v ok %v oob %d", err, r.OutOfBoundsOK, r.OutOfBounds)
	}
	r, err = Parse(readLog(t, "rccl_concluded_footer.log") + readLog(t, "roce_truncated_nccl-tests2.20.0.log"))
	if !errors.Is(err, ErrTruncated) || r.Runs != 1 || len(r.Rows) != 8 {
		t.Errorf("err %v runs %d rows %d", err, r.Runs, len(r.Rows))
	}
	r, err = Parse(readLog(t, "ib_footer_nccl-tests119.log") + readLog(t, "rccl_concluded_footer.log"))
	if err != nil || !r.OutOfBoundsOK || r.Runs != 2 {
		t.Errorf("err %v ok %v runs %d", err, r.OutOfBoundsOK, r.Runs)
	}
}

// Synthetic lines (written for these tests, not captured) for the shapes the
// published logs above do not show: mpirun's --tag-output prefix, GPUDirect
// RDMA channels, an InfiniBand device list, launcher failures.
func TestParseSynthetic(t *testing.T) {
	const table = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
	t.Run("mpirun tag-output prefix", func(t *testing.T) {
		log := "[1,0]<stdout>:" + table +
			"[1,0]<stdout>:  1073741824     268435456     float     sum      -1   5000.0  214.75  402.65      0   5001.0  214.71  402.58      0\n" +
			"[1,0]<stdout>:# Out of bounds values : 0 OK\n" +
			"[1,0]<stdout>:# Avg bus bandwidth    : 350.5\n"
		r, err := Parse(log)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Rows) != 1 || r.MaxBusBW != 402.65 || r.AvgBusBW != 350.5 {
			t.Errorf("rows %d peak %v avg %v", len(r.Rows), r.MaxBusBW, r.AvgBusBW)
		}
	})
	t.Run("IB with GDRDMA", func(t *testing.T) {
		log := "node-a:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>\n" +
			"node-a:1:2 [0] NCCL INFO Using network IB\n" +
			"node-a:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA\n" +
			"node-a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] via P2P/IPC\n"
		n := readNet(strings.Split(log, "\n"))
		if n.Transport != TransportIB || !n.GDR || n.NetChannels != 1 || n.IntraChannels != 1 ||
			!reflect.DeepEqual(n.Devices, []string{"mlx5_0:1/IB", "mlx5_1:1/IB"}) {
			t.Errorf("net = %+v", n)
		}
	})
	t.Run("network plugin", func(t *testing.T) {
		n := readNet([]string{"h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_1:1/IB/SHARP [RO]; OOB ens7:172.27.32.104<0>",
			"h:1:2 [0] NCCL INFO Using network IBext_v8"})
		if n.Transport != TransportIB || n.Network != "IBext_v8" || !reflect.DeepEqual(n.Devices, []string{"mlx5_1:1/IB/SHARP"}) {
			t.Errorf("net = %+v", n)
		}
		n = readNet([]string{"h:1:2 [0] NCCL INFO Using network AWS Libfabric"})
		if n.Transport != TransportOther || n.Network != "AWS Libfabric" {
			t.Errorf("net = %+v", n)
		}
	})
	t.Run("single node", func(t *testing.T) {
		n := readNet([]string{"h:1:2 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/direct pointer"})
		if n.Transport != TransportIntraNode {
			t.Errorf("net = %+v", n)
		}
	})
	t.Run("launcher cannot resolve a worker", func(t *testing.T) {
		r, err := Parse("ssh: Could not resolve hostname check-worker-1.check: Name or service not known\n")
		if !errors.Is(err, ErrNoTable) || len(r.LauncherErrors) != 1 {
			t.Fatalf("err %v launcher errors %q", err, r.LauncherErrors)
		}
		items := Checklist(r, nil, Input{})
		if s := seen(items); !reflect.DeepEqual(s, []string{ordered[3], "NCCL_DEBUG=INFO"}) {
			t.Errorf("marked %q", s)
		}
	})
	t.Run("footer without table", func(t *testing.T) {
		r, err := Parse(table + "# Out of bounds values : 0 OK\n")
		if !errors.Is(err, ErrTruncated) || r.FooterSeen != true {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("inf is not a measurement", func(t *testing.T) {
		r, err := Parse(table + "           8             2     float     sum      -1     0.00     inf     inf      0     1.00    0.01    0.01      0\n# Out of bounds values : 0 OK\n")
		if err != nil || r.MaxBusBW != 0.01 {
			t.Errorf("err %v max %v", err, r.MaxBusBW)
		}
	})
	t.Run("empty", func(t *testing.T) {
		if _, err := Parse(""); !errors.Is(err, ErrNoTable) {
			t.Errorf("err = %v", err)
		}
	})
}

func FuzzParse(f *testing.F) {
	entries, err := os.ReadDir(filepath.Join("testdata", "published"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") {
			f.Add(readLog(f, e.Name()))
		}
	}
	made, err := os.ReadDir(filepath.Join("testdata", "made"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range made {
		if strings.HasSuffix(e.Name(), ".log") {
			f.Add(readMade(f, e.Name()))
		}
	}
	f.Add("[1,0]<stdout>:# Out of bounds values : 3 FAILED\n")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if r == nil {
			t.Fatal("nil result")
		}
		if err == nil && (!r.FooterSeen || len(r.Rows) == 0) {
			t.Fatalf("complete result without a footer or rows: %+v", r)
		}
		above := func(v float64) bool { return !math.IsInf(v, 0) && v > r.MaxBusBW }
		for _, row := range r.Rows {
			if row.SizeBytes < 0 || above(row.OutOfPlace.BusBW) || row.InPlace != nil && above(row.InPlace.BusBW) {
				t.Fatalf("row %+v above peak %v", row, r.MaxBusBW)
			}
		}
		if r.WrongTotal < 0 || r.OutOfBounds < 0 {
			t.Fatalf("negative counts: %+v", r)
		}
		if r.Truncated != errors.Is(err, ErrTruncated) {
			t.Fatalf("Truncated %v with err %v", r.Truncated, err)
		}
		in := Input{PeakGBps: 100, NICsPerNode: 8, Thresholds: DefaultThresholds(), FailOn: FailOnNever}
		ev, eerr := Evaluate(r, in)
		if eerr != nil {
			t.Fatal(eerr)
		}
		// A failed run never carries a bandwidth verdict, and a bandwidth
		// verdict is always the largest-size row's.
		if (err != nil || r.OutOfBounds > 0 || r.WrongTotal > 0) && ev.Verdict.Bandwidth() {
			t.Fatalf("verdict %s beside a failure (err %v, oob %d, wrong %d)", ev.Verdict, err, r.OutOfBounds, r.WrongTotal)
		}
		if ev.Verdict.Bandwidth() {
			last, _ := r.LargestRow()
			for _, row := range r.Rows {
				if row.SizeBytes > last.SizeBytes {
					t.Fatalf("judged %d B, not the largest %d B", last.SizeBytes, row.SizeBytes)
				}
			}
			if ev.MeasuredAtSize != last.SizeBytes || ev.Ratio != ev.MeasuredBusBW/in.PeakGBps {
				t.Fatalf("evaluation %+v does not match the largest row %+v", ev, last)
			}
		}
		items := Checklist(r, &ev, in)
		if len(items) < 5 || !reflect.DeepEqual(titles(items[:5]), ordered) {
			t.Fatalf("checklist %q", titles(items))
		}
		msg := Message(r, &ev, in, err)
		if ev.Failed && strings.Contains(msg, "verdict: good") {
			t.Fatalf("a failed run says good:\n%s", msg)
		}
		if !ev.AvgSeen && strings.Contains(msg, "average") {
			t.Fatalf("an average the log does not give:\n%s", msg)
		}
	})
}
