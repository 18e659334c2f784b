package fabric

import (
	"strings"
	"testing"
)

// The checklist follows what each published log shows.
func TestChecklistPublished(t *testing.T) {
	for _, tc := range []struct {
		file    string
		in      Input
		want    []string
		notWant []string
	}{
		{
			file:    "socket_truncated_nccl2.25.1.log",
			in:      Input{NICsPerNode: 1},
			want:    []string{"NCCL used NET/Socket", "NCCL_IB_DISABLE=1 is set", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME"},
			notWant: []string{"NCCL_DEBUG=INFO", "NCCL_IB_GID_INDEX", "DNS"},
		},
		{
			file:    "socket_broadcast_nccl2.9.6.log",
			want:    []string{"NCCL used NET/Socket", "no RDMA device was usable", "NCCL_DEBUG=INFO"},
			notWant: []string{"NCCL_IB_GID_INDEX"},
		},
		{
			file:    "roce_failed_nccl2.19.3.log",
			in:      Input{NICsPerNode: 8},
			want:    []string{"RoCE (mlx5_10:1/RoCE mlx5_11:1/RoCE)", "NCCL_IB_GID_INDEX", "MTU", "hostNetwork", "found 2 NIC(s) but nics_per_node is 8"},
			notWant: []string{"NET/Socket", "NCCL_DEBUG=INFO"},
		},
		{
			file:    "ib_footer_nccl-tests119.log",
			want:    []string{"NCCL_DEBUG=INFO", "Using network IB"},
			notWant: []string{"NET/Socket", "wrong values"},
		},
		{
			file: "wrong_truncated_nccl-tests179.log",
			want: []string{"wrong values (210 out-of-bounds or #wrong)"},
		},
		{
			file: "oob_failed_old_format.log",
			want: []string{"wrong values (2 out-of-bounds or #wrong)", "NCCL_DEBUG=INFO"},
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r, _ := Parse(readLog(t, tc.file))
			got := strings.Join(Checklist(r, nil, tc.in), "\n")
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("checklist lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("checklist has %q:\n%s", w, got)
				}
			}
		})
	}
}

func TestChecklistGDRAndMessage(t *testing.T) {
	r := &Result{Hosts: []string{"a", "b"}, Net: Net{DebugInfo: true, Transport: TransportIB, Devices: []string{"mlx5_0:1/IB"}, NetChannels: 4}}
	ev := &Evaluation{MeasuredBusBW: 30, AvgBusBW: 20, PeakGBps: 50, Ratio: 0.6, Verdict: VerdictBad, Failed: true,
		Reasons: []string{"busbw 30.00 GB/s is 60.0% of the 50.00 GB/s peak: bad (fail_on = bad)"}}
	msg := Message(r, ev, Input{NICsPerNode: 4}, nil)
	for _, w := range []string{
		"measured busbw 30.00 GB/s (nccl-tests average 20.00 GB/s) against a peak of 50.00 GB/s: 60.0%, bad",
		"- busbw 30.00 GB/s is 60.0%",
		"transport: IB",
		"checklist:",
		"NCCL used InfiniBand (mlx5_0:1/IB)",
		"found 1 NIC(s) but nics_per_node is 4",
		"GPUDirect RDMA",
		"NCCL_ALGO=Ring",
	} {
		if !strings.Contains(msg, w) {
			t.Errorf("message lacks %q:\n%s", w, msg)
		}
	}
	r.Net.GDR = true
	if msg := Message(r, ev, Input{NICsPerNode: 1}, nil); strings.Contains(msg, "GPUDirect") || strings.Contains(msg, "nics_per_node") {
		t.Errorf("GDR in use and all NICs seen, yet:\n%s", msg)
	}
}
