package fabric

import (
	"fmt"
	"strings"
)

// Item is one entry of the checklist: what to check, and the lines of the
// log that point at it (none when the log says nothing about it).
type Item struct {
	Title    string
	Text     string
	Evidence []string
}

// Seen says whether the log evidences the item.
func (it Item) Seen() bool { return len(it.Evidence) > 0 }

// Checklist is what to look at after a failed, low or acceptable run. The
// first five items always come, in the order practitioners check them:
// NCCL_SOCKET_IFNAME, NCCL_IB_HCA, MTU and GID index, pods resolving and
// reaching each other, hostNetwork for RoCE — each marked with what the log
// shows about it. Items about what only some logs show (wrong values, no
// INFO lines, GPUDirect RDMA, one node, a network plugin, two nodes'
// tree algorithm) follow when they apply. r may be a partial Result (from a
// truncated log) or nil; ev may be nil (the run was not evaluated).
func Checklist(r *Result, ev *Evaluation, in Input) []Item {
	if r == nil {
		r = &Result{}
	}
	n := r.Net
	ns, job := in.Namespace, in.JobName
	if ns == "" {
		ns = "<namespace>"
	}
	if job == "" {
		job = "<check name>"
	}
	rdma := n.Transport == TransportIB || n.Transport == TransportRoCE
	collapse := ev != nil && len(ev.Notes) > 0

	ifname := Item{Title: "NCCL_SOCKET_IFNAME (the right interface)",
		Text: "set it (in `env`) to the interface that carries pod-to-pod traffic — node-to-node with host networking — e.g. " +
			"`eth0` or `ens1f0` (a prefix matches, `^` excludes, `=` is exact), never `lo` or a docker bridge. NCCL bootstraps " +
			"over it, and when it falls back to TCP sockets the data goes through it too. See the interfaces with " +
			fmt.Sprintf("`kubectl exec -n %s %s-worker-0 -- ip -br addr` while a check runs.", ns, job)}
	if n.Transport == TransportSocket {
		ifname.Evidence = appendLine(ifname.Evidence, n.SocketLine, "NCCL moved the data over TCP sockets (\"via NET/Socket\")")
		ifname.Evidence = appendLine(ifname.Evidence, n.SocketIfnameLine, "")
	}
	for _, l := range n.ConnectErrors {
		if strings.Contains(strings.ToLower(l), "bootstrap") || strings.Contains(strings.ToLower(l), "socket") {
			ifname.Evidence = appendLine(ifname.Evidence, l, "")
		}
	}
	if len(ifname.Evidence) > 0 {
		ifname.Evidence = appendLine(ifname.Evidence, n.BootstrapLine, "")
	}

	hca := Item{Title: "NCCL_IB_HCA (the RDMA devices)",
		Text: "list the HCAs that carry GPU traffic (`NCCL_IB_HCA=mlx5_0,mlx5_1,…`, `=mlx5_0:1` for an exact port); each must be " +
			"`PORT_ACTIVE` at the expected rate (`ibv_devinfo`, `ibstat`) and visible in the pod (`rdma_resources` for the RDMA " +
			"device plugin's resource, or /dev/infiniband, with the IPC_LOCK capability and the verbs libraries in the image); " +
			"`NCCL_IB_DISABLE` must not be 1."}
	hca.Evidence = appendLine(hca.Evidence, n.IBDisabledLine, "")
	hca.Evidence = appendLine(hca.Evidence, n.NoDeviceLine, "")
	if n.Transport == TransportSocket && n.IBDisabledLine == "" && n.NoDeviceLine == "" {
		hca.Evidence = append(hca.Evidence, "NCCL used TCP sockets, not InfiniBand/RoCE")
	}
	if rdma && in.NICsPerNode > 0 && len(n.Devices) > 0 && int64(len(n.Devices)) < in.NICsPerNode {
		hca.Evidence = append(hca.Evidence, fmt.Sprintf("NCCL found %d NIC(s) (%s) but nics_per_node is %d: the others are not visible in the pod or are excluded by NCCL_IB_HCA",
			len(n.Devices), strings.Join(n.Devices, " "), in.NICsPerNode))
		hca.Evidence = appendLine(hca.Evidence, n.IBHCALine, "")
	}

	mtu := Item{Title: "MTU and GID index",
		Text: "RoCE: `NCCL_IB_GID_INDEX` must select the RoCE v2 GID of the routable address (`show_gids`, or " +
			"/sys/class/infiniband/<hca>/ports/1/gid_attrs/types/<index>); MTU 9000 end to end on the interfaces and the switch " +
			"ports (`active_mtu` 4096 in `ibv_devinfo`), and lossless settings (PFC/ECN) for the RoCE traffic class " +
			"(`NCCL_IB_TC`). InfiniBand: `active_mtu` 4096 on every port. A wrong GID fails the connections " +
			"(`ibv_modify_qp failed`) or crawls; a wrong MTU or lossy switches show as busbw that collapses at large sizes."}
	if n.Transport == TransportRoCE {
		mtu.Evidence = appendLine(mtu.Evidence, n.IBLine, "NCCL used RoCE")
	}
	for _, l := range n.RDMAErrors {
		mtu.Evidence = appendLine(mtu.Evidence, l, "")
	}
	if collapse {
		mtu.Evidence = append(mtu.Evidence, ev.Notes...)
	}

	reach := Item{Title: "The pods resolve and reach each other",
		Text: fmt.Sprintf("the launcher reaches each worker over ssh as `%[2]s-worker-<i>.%[2]s.%[1]s.svc` (the MPIJob's headless "+
			"Service), then the ranks connect to each other on the bootstrap interface: NetworkPolicies, a DNS policy "+
			"(host networking needs `ClusterFirstWithHostNet`, which the check sets) or a firewall break it. Try while a check runs "+
			"(its pods go when it ends): `kubectl exec -n %[1]s %[2]s-worker-0 -- getent hosts %[2]s-worker-%[3]d.%[2]s.%[1]s.svc`, "+
			"then `kubectl exec -n %[1]s %[2]s-worker-0 -- ping -c 3 <the address it printed>`.", ns, job, otherWorker(in.Workers))}
	for _, l := range r.LauncherErrors {
		reach.Evidence = appendLine(reach.Evidence, l, "")
	}
	for _, l := range n.ConnectErrors {
		reach.Evidence = appendLine(reach.Evidence, l, "")
	}

	host := Item{Title: "hostNetwork: true for RoCE",
		Text: "RoCE needs the pods to see the RoCE interfaces and their GIDs: `host_network = true` (hostNetwork: true) or an " +
			"SR-IOV / macvlan secondary network; in the pod network NCCL finds no RDMA device, or GIDs of addresses it cannot route."}
	if in.HostNetwork {
		host.Text += " This check already runs with `host_network = true`."
	} else {
		if n.Transport == TransportRoCE {
			host.Evidence = append(host.Evidence, fmt.Sprintf("NCCL used RoCE devices (%s) from the pod network (host_network = false)", strings.Join(n.Devices, " ")))
		}
		if n.NoDeviceLine != "" {
			host.Evidence = appendLine(host.Evidence, n.NoDeviceLine, "")
		}
	}

	out := []Item{ifname, hca, mtu, reach, host}
	extra := func(title, text string, evidence ...string) {
		out = append(out, Item{Title: title, Text: text, Evidence: evidence})
	}
	if r.OutOfBounds > 0 || r.WrongTotal > 0 {
		extra("Wrong values", "do not trust the bandwidth; check GPU health (XID errors, ECC), PCIe ACS (must be off for "+
			"GPUDirect peer traffic), and rerun with NCCL_NET_GDR_LEVEL=LOC or NCCL_P2P_DISABLE=1 to isolate the path that corrupts data.",
			fmt.Sprintf("%d out-of-bounds values, %d in the #wrong columns", r.OutOfBounds, r.WrongTotal))
	}
	if !n.DebugInfo {
		extra("NCCL_DEBUG=INFO", "without NCCL INFO lines the log cannot show which transport or interface NCCL used: "+
			"rerun with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET keeps it short) and look for \"Using network IB\" or "+
			"\"Using network Socket\" and the \"via NET/…\" channel lines.", "the log has no \"NCCL INFO\" line")
	}
	if rdma && n.NetChannels > 0 && !n.GDR {
		extra("GPUDirect RDMA", "no channel used GPUDirect RDMA (no \"GDRDMA\" in the \"via NET/IB\" lines): load nvidia-peermem "+
			"(or use DMA-BUF), disable PCIe ACS, and check the GPU and NIC share a PCIe switch.",
			fmt.Sprintf("%d \"via NET/…\" channel lines, none via GDRDMA", n.NetChannels))
	}
	switch n.Transport {
	case TransportIntraNode:
		extra("More than one node", "the run did not cross the network: run on 2 or more nodes to test the fabric.",
			fmt.Sprintf("%d intra-node (P2P/SHM) channel lines, no network channel", n.IntraChannels))
	case TransportOther:
		extra("Network plugin", "check the plugin's own tuning guide and that its library matches the NCCL version.",
			fmt.Sprintf("Using network %s", n.Network))
	}
	if ev != nil && ev.Verdict.Bandwidth() && ev.Verdict != VerdictGood && len(r.Hosts) == 2 {
		extra("NCCL_ALGO=Ring", "on two nodes NCCL may pick a tree algorithm whose busbw is not comparable to the link rate: "+
			"rerun with NCCL_ALGO=Ring to compare with the peak.", "two hosts in the rank lines: "+strings.Join(r.Hosts, ", "))
	}
	return out
}

// otherWorker is the worker the reachability command resolves from
// worker 0: worker 1 when there is one.
func otherWorker(workers int) int {
	if workers == 1 {
		return 0
	}
	return 1
}

// appendLine adds line (or, when line is empty, fallback) unless both are
// empty or it is already there.
func appendLine(dst []string, line, fallback string) []string {
	if line == "" {
		line = fallback
	}
	if line == "" {
		return dst
	}
	for _, d := range dst {
		if d == line {
			return dst
		}
	}
	return append(dst, line)
}

// Headline is the one-line verdict of a run with its numbers. It never
// names a bandwidth verdict beside a failure: an out-of-bounds, truncated
// or failed run shows its numbers as "not judged".
func Headline(ev *Evaluation, in Input) string {
	peak := fmt.Sprintf("%.2f GB/s peak", ev.PeakGBps)
	if in.NICsPerNode > 0 {
		peak += fmt.Sprintf(" (%d NICs × %g Gb/s ÷ 8)", in.NICsPerNode, ev.PeakGBps*8/float64(in.NICsPerNode))
	}
	numbers := ""
	if ev.Measured {
		numbers = fmt.Sprintf("busbw %.2f GB/s at the largest size (%s, the table's last row) is %.1f%% of the %s",
			ev.MeasuredBusBW, HumanSize(ev.MeasuredAtSize), 100*ev.Ratio, peak)
	}
	avg := ""
	if ev.AvgSeen {
		avg = fmt.Sprintf("; nccl-tests' average over all sizes %.2f GB/s (latency-bound sizes included, not judged)", ev.AvgBusBW)
	}
	th := in.Thresholds.WithDefaults()
	switch ev.Verdict {
	case VerdictGood, VerdictAcceptable, VerdictBad:
		return fmt.Sprintf("verdict: %s — %s (good ≥ %g%%, acceptable ≥ %g%%)%s", ev.Verdict, numbers, 100*th.Good, 100*th.Acceptable, avg)
	case VerdictOutOfBounds:
		s := fmt.Sprintf("verdict: out_of_bounds — %d out-of-bounds values, %d wrong: the bandwidth is not judged", ev.OutOfBounds, ev.Wrong)
		if numbers != "" {
			s += " (" + numbers + ")"
		}
		return s
	case VerdictTruncated:
		s := fmt.Sprintf("verdict: truncated — the table stops after %d rows without its footer: the bandwidth is not judged", ev.Rows)
		if ev.Measured {
			s += fmt.Sprintf(" (the last row read, %s, had busbw %.2f GB/s: %.1f%% of the %s)", HumanSize(ev.MeasuredAtSize), ev.MeasuredBusBW, 100*ev.Ratio, peak)
		}
		return s
	case VerdictFailed:
		s := "verdict: failed — the launcher failed: the bandwidth is not judged"
		if numbers != "" {
			s += " (" + numbers + ")"
		}
		return s
	}
	return "verdict: no_result — nothing was measured"
}

// Message is the text of a failed run or of a warning: the cause, the
// verdict with its numbers, the reasons, the transport and the whole
// checklist, one item a paragraph, the items the log evidences marked.
func Message(r *Result, ev *Evaluation, in Input, cause error) string {
	var b strings.Builder
	if cause != nil {
		fmt.Fprintf(&b, "%v\n", cause)
	}
	if ev != nil {
		fmt.Fprintf(&b, "%s\n", Headline(ev, in))
		for _, reason := range ev.Reasons {
			fmt.Fprintf(&b, "- %s\n", reason)
		}
		for _, note := range ev.Notes {
			fmt.Fprintf(&b, "- %s\n", note)
		}
	}
	if r != nil && r.Net.Transport != TransportUnknown {
		fmt.Fprintf(&b, "transport: %s\n", r.Net.Transport)
	}
	b.WriteString("checklist, in this order (* = this log shows evidence for the item):\n")
	for i, it := range Checklist(r, ev, in) {
		mark := " "
		if it.Seen() {
			mark = "*"
		}
		fmt.Fprintf(&b, "%s %d. %s: %s\n", mark, i+1, it.Title, it.Text)
		for _, e := range it.Evidence {
			fmt.Fprintf(&b, "     log: %s\n", e)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
