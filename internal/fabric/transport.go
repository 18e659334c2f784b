package fabric

import (
	"regexp"
	"strings"
)

// Transport is the inter-node transport NCCL reported.
type Transport string

const (
	// TransportUnknown: no NCCL_DEBUG=INFO line says (INFO was off, or NCCL
	// never got that far).
	TransportUnknown Transport = ""
	// TransportIB: InfiniBand verbs over an InfiniBand link layer.
	TransportIB Transport = "IB"
	// TransportRoCE: InfiniBand verbs over Ethernet (RoCE) — NCCL's IB
	// transport, with devices whose link layer is Ethernet.
	TransportRoCE Transport = "RoCE"
	// TransportSocket: TCP sockets — the fallback when no RDMA device works.
	TransportSocket Transport = "Socket"
	// TransportIntraNode: only P2P/SHM channels, no network (one node).
	TransportIntraNode Transport = "IntraNode"
	// TransportOther: another network plugin (e.g. "AWS Libfabric").
	TransportOther Transport = "Other"
)

// Net is what the NCCL_DEBUG=INFO lines of a log say about the network.
type Net struct {
	// DebugInfo: the log has "NCCL INFO" lines at all.
	DebugInfo bool
	Transport Transport
	// Network is the name in "Using network X" ("IB", "Socket",
	// "IBext_v8", …); "" when absent.
	Network string
	// Devices are the NICs of the "NET/IB : Using [0]mlx5_0:1/IB …" line
	// (or of "NET/Socket : Using [0]eth0:…"), as "mlx5_0:1/IB"; the first
	// line seen, deduplicated.
	Devices []string
	// IBNoDevice: "NET/IB : No device found." or "Failed to open
	// libibverbs.so" — no usable RDMA device.
	IBNoDevice bool
	// IBDisabled: "NCCL_IB_DISABLE set by environment to 1".
	IBDisabled bool
	// GDR: some channel went "via NET/…/GDRDMA" (GPUDirect RDMA in use).
	GDR bool
	// NetChannels counts "via NET/…" channel lines; IntraChannels the
	// "via P2P/…" and "via SHM/…" ones.
	NetChannels   int
	IntraChannels int
	// Evidence: the lines the transport was read from (a few).
	Evidence []string

	// Lines the checklist quotes (the first of each kind; "" when absent):
	// "NCCL_SOCKET_IFNAME set by environment to …", "Bootstrap : Using …",
	// "NET/Socket : Using …", "NET/IB : Using …", "NET/IB : No device
	// found" (or libibverbs missing), "NCCL_IB_DISABLE set … to 1",
	// "NCCL_IB_HCA set by environment to …".
	SocketIfnameLine, BootstrapLine, SocketLine, IBLine, NoDeviceLine, IBDisabledLine, IBHCALine string
	// RDMAErrors are NCCL lines about GIDs, the MTU, queue-pair transitions
	// or transport retries (what a wrong GID index or MTU produces);
	// ConnectErrors NCCL lines about sockets, bootstrap or connections
	// between ranks. Each capped at maxEvidence.
	RDMAErrors, ConnectErrors []string
}

var (
	reNetIBUsing   = regexp.MustCompile(`NET/IB\s*:\s*Using\s+(.*?)(?:\s*\[RO\])?\s*;\s*OOB`)
	reNetSockUsing = regexp.MustCompile(`NET/Socket\s*:\s*Using\s+(.*)$`)
	reDevice       = regexp.MustCompile(`\[\d+\](\S+)`)
	reUsingNetwork = regexp.MustCompile(`Using network (\S+(?: \S+)?)`)
	reVia          = regexp.MustCompile(`via (NET/\S+|P2P/\S+|SHM\S*|CollNet\S*)`)
	reBootstrap    = regexp.MustCompile(`Bootstrap\s*:\s*Using`)
	reProblem      = regexp.MustCompile(`(?i)NCCL WARN|error|fail|unreachable|timed? ?out|refused`)
	reRDMAProblem  = regexp.MustCompile(`(?i)\bgid|\bmtu\b|ibv_modify_qp|ibv_create_ah|IBV_WC_|retry.?c(?:ou)?nt|RETRY_EXC`)
	reConnProblem  = regexp.MustCompile(`(?i)socket|bootstrap|connect|unreachable|no route|resolve`)
)

// first keeps the first line of a kind.
func first(dst *string, l string) {
	if *dst == "" {
		*dst = strings.TrimSpace(l)
	}
}

func capped(dst *[]string, l string) {
	if len(*dst) < maxEvidence {
		*dst = append(*dst, strings.TrimSpace(l))
	}
}

func readNet(lines []string) Net {
	var n Net
	var ibDevs, sockDevs []string
	chosen := TransportUnknown
	viaNet := ""
	addEvidence := func(l string) {
		if len(n.Evidence) < maxEvidence {
			n.Evidence = append(n.Evidence, strings.TrimSpace(l))
		}
	}
	for _, l := range lines {
		if !strings.Contains(l, "NCCL INFO") && !strings.Contains(l, "NCCL WARN") {
			continue
		}
		n.DebugInfo = n.DebugInfo || strings.Contains(l, "NCCL INFO")
		switch {
		case strings.Contains(l, "NCCL_SOCKET_IFNAME set"):
			first(&n.SocketIfnameLine, l)
		case strings.Contains(l, "NCCL_IB_HCA set"):
			first(&n.IBHCALine, l)
		case reBootstrap.MatchString(l):
			first(&n.BootstrapLine, l)
		}
		if reProblem.MatchString(l) {
			switch {
			case reRDMAProblem.MatchString(l):
				capped(&n.RDMAErrors, l)
			case reConnProblem.MatchString(l) && !strings.Contains(l, "NET/Plugin") && !strings.Contains(l, "libibverbs"):
				capped(&n.ConnectErrors, l)
			}
		}
		if strings.Contains(l, "NCCL_IB_DISABLE set by environment to 1") {
			if !n.IBDisabled {
				addEvidence(l)
				first(&n.IBDisabledLine, l)
			}
			n.IBDisabled = true
		}
		if strings.Contains(l, "NET/IB : No device found") || strings.Contains(l, "NET/IB: No device found") ||
			strings.Contains(l, "Failed to open libibverbs") {
			if !n.IBNoDevice {
				addEvidence(l)
				first(&n.NoDeviceLine, l)
			}
			n.IBNoDevice = true
		}
		if m := reNetIBUsing.FindStringSubmatch(l); m != nil && ibDevs == nil {
			for _, d := range reDevice.FindAllStringSubmatch(m[1], -1) {
				ibDevs = append(ibDevs, d[1])
			}
			addEvidence(l)
			first(&n.IBLine, l)
		}
		if m := reNetSockUsing.FindStringSubmatch(l); m != nil && sockDevs == nil {
			for _, d := range reDevice.FindAllStringSubmatch(m[1], -1) {
				sockDevs = append(sockDevs, d[1])
			}
			addEvidence(l)
			first(&n.SocketLine, l)
		}
		if m := reUsingNetwork.FindStringSubmatch(l); m != nil && n.Network == "" {
			n.Network = strings.TrimSpace(m[1])
			addEvidence(l)
		}
		for _, m := range reVia.FindAllStringSubmatch(l, -1) {
			v := m[1]
			switch {
			case strings.HasPrefix(v, "NET/"):
				if n.NetChannels == 0 {
					addEvidence(l)
				}
				n.NetChannels++
				if viaNet == "" {
					viaNet = v
				}
				if strings.Contains(v, "GDRDMA") {
					n.GDR = true
				}
			default:
				n.IntraChannels++
			}
		}
	}
	roce := false
	for _, d := range ibDevs {
		if strings.Contains(d, "/RoCE") {
			roce = true
		}
	}
	ib := func() Transport {
		if roce {
			return TransportRoCE
		}
		return TransportIB
	}
	// The channel lines say what carried data; "Using network" what NCCL
	// picked; the device lists only what it found.
	switch {
	case strings.HasPrefix(viaNet, "NET/Socket"):
		chosen = TransportSocket
	case strings.HasPrefix(viaNet, "NET/IB"):
		chosen = ib()
	case viaNet != "":
		chosen = TransportOther
	case n.Network == "Socket":
		chosen = TransportSocket
	case n.Network == "IB" || strings.HasPrefix(n.Network, "IBext"):
		chosen = ib()
	case n.Network != "":
		chosen = TransportOther
	case len(ibDevs) > 0:
		chosen = ib()
	case len(sockDevs) > 0 || n.IBNoDevice || n.IBDisabled:
		chosen = TransportSocket
	case n.IntraChannels > 0:
		chosen = TransportIntraNode
	}
	n.Transport = chosen
	switch chosen {
	case TransportSocket:
		n.Devices = sockDevs
	case TransportIB, TransportRoCE:
		n.Devices = ibDevs
	}
	return n
}
