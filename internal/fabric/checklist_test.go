package fabric

import (
	"reflect"
	"strings"
	"testing"
)

// The five items practitioners check, in their order: every checklist
// starts with them, whatever the log shows.
var ordered = []string{
	"NCCL_SOCKET_IFNAME (the right interface)",
	"NCCL_IB_HCA (the RDMA devices)",
	"MTU and GID index",
	"The pods resolve and reach each other",
	"hostNetwork: true for RoCE",
}

func titles(items []Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Title)
	}
	return out
}

// seen is the titles of the items the log evidences.
func seen(items []Item) []string {
	var out []string
	for _, it := range items {
		if it.Seen() {
			out = append(out, it.Title)
		}
	}
	return out
}

func evidence(items []Item, title string) string {
	for _, it := range items {
		if it.Title == title {
			return strings.Join(it.Evidence, "\n")
		}
	}
	return ""
}

// Every log, published or made, gets the whole ordered list; the marks
// follow what each shows.
func TestChecklistOrderAndMarks(t *testing.T) {
	for _, tc := range []struct {
		file  string
		made  bool
		in    Input
		seen  []string // the marked items, in order
		extra []string // the titles after the five
		proof map[string]string
	}{
		{
			file: "socket_truncated_nccl2.25.1.log", in: Input{NICsPerNode: 1},
			seen: []string{ordered[0], ordered[1]},
			proof: map[string]string{
				ordered[0]: "NET/Socket : Using [0]eno2:10.42.0.2<0>",
				ordered[1]: "NCCL_IB_DISABLE set by environment to 1",
			},
		},
		{
			file: "socket_broadcast_nccl2.9.6.log",
			seen: []string{ordered[0], ordered[1], ordered[4]}, extra: []string{"NCCL_DEBUG=INFO"},
			proof: map[string]string{ordered[1]: "Failed to open libibverbs.so", ordered[4]: "Failed to open libibverbs.so"},
		},
		{
			file: "roce_failed_nccl2.19.3.log", in: Input{NICsPerNode: 8},
			seen: []string{ordered[1], ordered[2], ordered[4]},
			proof: map[string]string{
				ordered[1]: "NCCL found 2 NIC(s) (mlx5_10:1/RoCE mlx5_11:1/RoCE) but nics_per_node is 8",
				ordered[2]: "NET/IB : Using [0]mlx5_10:1/RoCE [1]mlx5_11:1/RoCE",
				ordered[4]: "NCCL used RoCE devices (mlx5_10:1/RoCE mlx5_11:1/RoCE) from the pod network",
			},
		},
		{
			file: "roce_failed_nccl2.19.3.log", in: Input{NICsPerNode: 2, HostNetwork: true},
			seen: []string{ordered[2]},
		},
		{file: "ib_footer_nccl-tests119.log", extra: []string{"NCCL_DEBUG=INFO"}},
		{file: "wrong_truncated_nccl-tests179.log", extra: []string{"Wrong values"},
			proof: map[string]string{"Wrong values": "0 out-of-bounds values, 210 in the #wrong columns"}},
		{file: "oob_failed_old_format.log", extra: []string{"Wrong values", "NCCL_DEBUG=INFO"}},
		{file: "good_8x400_ib.log", made: true, in: Input{NICsPerNode: 8}},
		// Two hosts and a verdict below good: the tree-algorithm note.
		{file: "acceptable_4x200_ib.log", made: true, in: Input{NICsPerNode: 4}, extra: []string{"NCCL_ALGO=Ring"}},
		{file: "collapse_4x200_roce.log", made: true, in: Input{NICsPerNode: 4}, extra: []string{"NCCL_ALGO=Ring"},
			seen:  []string{ordered[2], ordered[4]},
			proof: map[string]string{ordered[2]: "busbw collapses at the largest sizes: 97.02 GB/s (97.0%, good) at 2 GiB, 61.04 GB/s (61.0%) at 8 GiB, the last row"}},
		{file: "oob_failed_4x200_ib.log", made: true, in: Input{NICsPerNode: 4}, extra: []string{"Wrong values"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			read := readLog
			if tc.made {
				read = readMade
			}
			text := read(t, tc.file)
			r, _ := Parse(text)
			tc.in.PeakGBps, tc.in.Thresholds = 100, DefaultThresholds()
			ev, err := Evaluate(r, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			items := Checklist(r, &ev, tc.in)
			got := titles(items)
			if len(got) < 5 || !reflect.DeepEqual(got[:5], ordered) {
				t.Fatalf("the checklist does not start with the five items in order: %q", got)
			}
			if !reflect.DeepEqual(got[5:], tc.extra) && !(len(got) == 5 && tc.extra == nil) {
				t.Errorf("extra items %q, want %q", got[5:], tc.extra)
			}
			if s := seen(items[:5]); !reflect.DeepEqual(s, tc.seen) {
				t.Errorf("marked %q, want %q", s, tc.seen)
			}
			for title, want := range tc.proof {
				if e := evidence(items, title); !strings.Contains(e, want) {
					t.Errorf("%s: evidence %q lacks %q", title, e, want)
				}
			}
		})
	}
}

// A launcher that cannot resolve a worker marks the reachability item with
// its line, and the item names the job's own hostnames in the command.
func TestChecklistReachability(t *testing.T) {
	r, _ := Parse("ssh: Could not resolve hostname fabric-worker-1.fabric.default.svc: Name or service not known\n" +
		"node-a:1:2 [0] bootstrap.cc:72 NCCL WARN Bootstrap : connect to 10.0.0.2<43127> failed: Connection refused\n")
	in := Input{Namespace: "default", JobName: "fabric", Workers: 2}
	items := Checklist(r, nil, in)
	if s := seen(items[:5]); !reflect.DeepEqual(s, []string{ordered[0], ordered[3]}) {
		t.Errorf("marked %q", s)
	}
	reach := items[3]
	for _, w := range []string{
		"kubectl exec -n default fabric-worker-0 -- getent hosts fabric-worker-1.fabric.default.svc",
		"kubectl exec -n default fabric-worker-0 -- ping -c 3",
	} {
		if !strings.Contains(reach.Text, w) {
			t.Errorf("reachability item lacks %q: %s", w, reach.Text)
		}
	}
	if e := strings.Join(reach.Evidence, "\n"); !strings.Contains(e, "Could not resolve hostname") || !strings.Contains(e, "Connection refused") {
		t.Errorf("evidence %q", e)
	}
	// Without the job's name the command has placeholders.
	if items := Checklist(nil, nil, Input{}); !strings.Contains(items[3].Text, "getent hosts <check name>-worker-1.<check name>.<namespace>.svc") {
		t.Errorf("%s", items[3].Text)
	}
}

func TestChecklistGDRAndMessage(t *testing.T) {
	r := &Result{Hosts: []string{"a", "b"}, Net: Net{DebugInfo: true, Transport: TransportIB, Devices: []string{"mlx5_0:1/IB"}, NetChannels: 4}}
	in := Input{NICsPerNode: 4, PeakGBps: 50, Thresholds: DefaultThresholds()}
	ev := &Evaluation{MeasuredBusBW: 30, MeasuredAtSize: 8 << 30, Measured: true, AvgBusBW: 20, AvgSeen: true, PeakGBps: 50,
		Ratio: 0.6, Verdict: VerdictBad, Bandwidth: VerdictBad, Failed: true,
		Reasons: []string{"busbw 30.00 GB/s at the largest size (8 GiB) is 60.0% of the 50.00 GB/s peak: bad (fail_on = bad)"}}
	msg := Message(r, ev, in, nil)
	for _, w := range []string{
		"verdict: bad — busbw 30.00 GB/s at the largest size (8 GiB, the table's last row) is 60.0% of the 50.00 GB/s peak (4 NICs × 100 Gb/s ÷ 8) (good ≥ 90%, acceptable ≥ 80%); nccl-tests' average over all sizes 20.00 GB/s",
		"- busbw 30.00 GB/s at the largest size",
		"transport: IB",
		"checklist, in this order (* = this log shows evidence for the item):",
		"  1. NCCL_SOCKET_IFNAME (the right interface): ",
		"* 2. NCCL_IB_HCA (the RDMA devices): ",
		"     log: NCCL found 1 NIC(s) (mlx5_0:1/IB) but nics_per_node is 4",
		"  3. MTU and GID index: ",
		"  4. The pods resolve and reach each other: ",
		"  5. hostNetwork: true for RoCE: ",
		"* 6. GPUDirect RDMA: ",
		"* 7. NCCL_ALGO=Ring: ",
	} {
		if !strings.Contains(msg, w) {
			t.Errorf("message lacks %q:\n%s", w, msg)
		}
	}
	r.Net.GDR = true
	in.NICsPerNode = 1
	if msg := Message(r, ev, in, nil); strings.Contains(msg, "GPUDirect") || strings.Contains(msg, "nics_per_node") {
		t.Errorf("GDR in use and all NICs seen, yet:\n%s", msg)
	}
}
