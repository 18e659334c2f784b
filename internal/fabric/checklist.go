package fabric

import (
	"fmt"
	"strings"
)

// Checklist is what to look at after a failed or low run, most specific
// first, tailored to what the log shows. r may be a partial Result (from a
// truncated log); ev may be nil (no evaluation: the run did not finish).
func Checklist(r *Result, ev *Evaluation, in Input) []string {
	var out []string
	add := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	if r == nil {
		r = &Result{}
	}
	n := r.Net

	if len(r.LauncherErrors) > 0 {
		add("The launcher could not reach every worker (%q): check pod-to-pod DNS (the MPIJob's "+
			"worker hostnames must resolve from the launcher, e.g. through the job's headless Service) "+
			"and reachability (NetworkPolicies, the ssh port, the bootstrap interface NCCL_SOCKET_IFNAME).",
			r.LauncherErrors[0])
	}
	if r.OutOfBounds > 0 || r.WrongTotal > 0 {
		add("The collective returned wrong values (%d out-of-bounds or #wrong): do not trust the bandwidth; check "+
			"GPU health (XID errors, ECC), PCIe ACS (must be off for GPUDirect peer traffic), and rerun with "+
			"NCCL_NET_GDR_LEVEL=LOC / NCCL_P2P_DISABLE=1 to isolate the path that corrupts data.", max64(r.OutOfBounds, r.WrongTotal))
	}

	switch n.Transport {
	case TransportSocket:
		why := "InfiniBand/RoCE not used"
		if n.IBDisabled {
			why = "NCCL_IB_DISABLE=1 is set, so InfiniBand/RoCE was not even tried — unset it"
		} else if n.IBNoDevice {
			why = "no RDMA device was usable inside the pod (\"NET/IB : No device found\")"
		}
		add("NCCL used NET/Socket (TCP): %s — check that the pod gets the RDMA devices (the device plugin's "+
			"rdma resource or /dev/infiniband, the IPC_LOCK capability), that NCCL_IB_HCA names active HCAs "+
			"(ibv_devinfo: state PORT_ACTIVE) and NCCL_IB_DISABLE is not set, and that NCCL_SOCKET_IFNAME "+
			"selects the fast interface rather than the pod's default eth0.", why)
	case TransportRoCE:
		add("NCCL used RoCE (%s): check NCCL_IB_GID_INDEX points at the RoCEv2 GID of the routable address "+
			"(show_gids; /sys/class/infiniband/<hca>/ports/1/gid_attrs/types/<index>), the MTU end to end "+
			"(9000 on the interfaces and the switch ports, active_mtu 4096), lossless settings (PFC/ECN) on the "+
			"switches, and host networking (hostNetwork: true, or an SR-IOV/macvlan secondary network) so the "+
			"pods see the RoCE interfaces and their GIDs.", strings.Join(n.Devices, " "))
	case TransportIB:
		add("NCCL used InfiniBand (%s): check every HCA is listed in NCCL_IB_HCA and PORT_ACTIVE at the expected "+
			"rate (ibstat), and the subnet manager sees all ports.", strings.Join(n.Devices, " "))
	case TransportOther:
		add("NCCL used the %q network plugin: check the plugin's own tuning guide and that its library matches the NCCL version.", n.Network)
	case TransportIntraNode:
		add("NCCL used only intra-node paths (P2P/SHM): the run did not cross the network; run on 2 or more nodes to test the fabric.")
	}
	if (n.Transport == TransportIB || n.Transport == TransportRoCE) && in.NICsPerNode > 0 && len(n.Devices) > 0 &&
		int64(len(n.Devices)) < in.NICsPerNode {
		add("NCCL found %d NIC(s) but nics_per_node is %d: the missing ones are not visible in the pod or are "+
			"excluded by NCCL_IB_HCA.", len(n.Devices), in.NICsPerNode)
	}
	if (n.Transport == TransportIB || n.Transport == TransportRoCE) && n.NetChannels > 0 && !n.GDR {
		add("No channel used GPUDirect RDMA (no \"GDRDMA\" in the \"via NET/IB\" lines): load nvidia-peermem " +
			"(or use DMA-BUF), disable PCIe ACS, and check the GPU and NIC share a PCIe switch.")
	}
	if !n.DebugInfo {
		add("The log has no NCCL INFO lines, so the transport is unknown: rerun with NCCL_DEBUG=INFO " +
			"(NCCL_DEBUG_SUBSYS=INIT,NET keeps it short) and look for \"Using network IB\" or \"Using network Socket\" " +
			"and the \"via NET/…\" channel lines.")
	}
	if ev != nil && ev.Verdict != VerdictGood && len(r.Hosts) == 2 {
		add("On two nodes NCCL may pick a tree algorithm whose busbw is not comparable to the link rate: " +
			"rerun with NCCL_ALGO=Ring to compare with the peak.")
	}
	if ev != nil && ev.Verdict != VerdictGood && n.Transport != TransportSocket {
		add("NCCL_SOCKET_IFNAME only selects the bootstrap/socket interface; with RDMA it does not limit the data " +
			"path, but a wrong value makes bootstrap slow or fail — set it to the interface that carries pod-to-pod traffic.")
	}
	return out
}

// Message is the failure text of a run: the numbers, the reasons and the
// checklist, one item a line.
func Message(r *Result, ev *Evaluation, in Input, cause error) string {
	var b strings.Builder
	if cause != nil {
		fmt.Fprintf(&b, "%v\n", cause)
	}
	if ev != nil {
		fmt.Fprintf(&b, "measured busbw %.2f GB/s (nccl-tests average %.2f GB/s) against a peak of %.2f GB/s: %.1f%%, %s\n",
			ev.MeasuredBusBW, ev.AvgBusBW, ev.PeakGBps, 100*ev.Ratio, ev.Verdict)
		for _, reason := range ev.Reasons {
			fmt.Fprintf(&b, "- %s\n", reason)
		}
	}
	if r != nil && r.Net.Transport != TransportUnknown {
		fmt.Fprintf(&b, "transport: %s\n", r.Net.Transport)
	}
	items := Checklist(r, ev, in)
	if len(items) > 0 {
		b.WriteString("checklist:\n")
		for _, it := range items {
			fmt.Fprintf(&b, "- %s\n", it)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
