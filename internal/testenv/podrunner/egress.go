package podrunner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// A "cluster network" for a cluster without kubelets or kube-proxy
// (Options.Egress). kube-apiserver runs with an EgressSelectorConfiguration
// whose "cluster" egress is HTTP CONNECT over a Unix socket in the Env's
// directory, so every call it makes into the cluster (admission and CRD
// conversion webhooks that name a Service, aggregated APIs) arrives at the
// socket as `CONNECT <ClusterIP>:<port>`. The egress proxy serving the socket
// maps that to a loopback address:
//
//	ClusterIP:port → the Service with that ClusterIP and port
//	              → the Service port's targetPort (number or container port name)
//	              → a pod the pod runner runs (runner.go) whose labels match
//	                the Service's selector, Ready ones first
//	              → the loopback port the runner gave that container port
//
// and tunnels the bytes; TLS stays end to end, so the API server verifies the
// serving certificate against <service>.<namespace>.svc as in a real cluster.
// Loopback destinations (webhooks registered by URL on 127.0.0.1) are
// tunnelled as they are. Anything else gets 503 with the reason, and a line in
// <Dir>/egress.log (the first time also in the Env's log).

const (
	egressConfigFile = "egress.yaml"
	egressSocketFile = "egress.sock"
	egressLogFile    = "egress.log"
)

// writeEgressConfig writes the EgressSelectorConfiguration for kube-apiserver's
// --egress-selector-config-file.
func writeEgressConfig(path, socket string) error {
	config := fmt.Sprintf(`apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %s
`, strconv.Quote(socket))
	return os.WriteFile(path, []byte(config), 0o644)
}

// backendFinder says which loopback address serves a Service port.
type backendFinder interface {
	backend(svc *corev1.Service, port corev1.ServicePort) (string, error)
}

// egressProxy is the HTTP CONNECT proxy behind the API server's cluster egress.
type egressProxy struct {
	client   kubernetes.Interface
	backends backendFinder
	logf     func(format string, args ...any) // the Env's log: first failure per destination
	log      io.Writer                        // every line

	server *http.Server

	mu     sync.Mutex
	warned map[string]bool
	conns  map[net.Conn]bool // open tunnels, closed by close
	closed bool
}

// startEgressProxy serves CONNECT on a new Unix socket at path.
func startEgressProxy(path string, client kubernetes.Interface, backends backendFinder, logf func(string, ...any), log io.Writer) (*egressProxy, error) {
	_ = os.Remove(path) // a socket left by an earlier cluster in this directory
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("testenv: egress proxy: %w", err)
	}
	p := newEgressProxy(client, backends, logf, log)
	go func() { _ = p.server.Serve(l) }()
	return p, nil
}

func newEgressProxy(client kubernetes.Interface, backends backendFinder, logf func(string, ...any), log io.Writer) *egressProxy {
	if log == nil {
		log = io.Discard
	}
	p := &egressProxy{client: client, backends: backends, logf: logf, log: log, warned: map[string]bool{}, conns: map[net.Conn]bool{}}
	p.server = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	return p
}

// close stops serving and closes the open tunnels.
func (p *egressProxy) close() {
	_ = p.server.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
}

func (p *egressProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "testenv egress proxy: only CONNECT", http.StatusMethodNotAllowed)
		return
	}
	dest := r.Host
	addr, err := p.resolve(r.Context(), dest)
	var upstream net.Conn
	if err == nil {
		upstream, err = net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			err = fmt.Errorf("%s does not answer: %w", addr, err)
		}
	}
	if err != nil {
		p.refuse(dest, err)
		http.Error(w, fmt.Sprintf("testenv egress proxy: CONNECT %s: %v", dest, err), http.StatusServiceUnavailable)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "testenv egress proxy: cannot hijack", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	if !p.track(conn, upstream) {
		conn.Close()
		upstream.Close()
		return
	}
	fmt.Fprintf(p.log, "%s CONNECT %s → %s\n", time.Now().Format(time.RFC3339), dest, addr)
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		p.untrack(conn, upstream)
		return
	}
	go p.pipe(conn, buf.Reader, upstream)
}

// pipe copies both ways until either side is done, then closes both.
func (p *egressProxy) pipe(client net.Conn, clientReader *bufio.Reader, upstream net.Conn) {
	defer p.untrack(client, upstream)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(upstream, clientReader); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, upstream); done <- struct{}{} }()
	<-done
}

func (p *egressProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range conns {
		p.conns[c] = true
	}
	return true
}

func (p *egressProxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}

// refuse logs a destination the proxy cannot reach: every time to egress.log,
// the first time per destination also to the Env's log.
func (p *egressProxy) refuse(dest string, err error) {
	fmt.Fprintf(p.log, "%s CONNECT %s refused (503): %v\n", time.Now().Format(time.RFC3339), dest, err)
	p.mu.Lock()
	first := !p.warned[dest]
	p.warned[dest] = true
	p.mu.Unlock()
	if first && p.logf != nil {
		p.logf("egress: CONNECT %s refused (503): %v (further refusals only in %s)", dest, err, egressLogFile)
	}
}

// resolve maps a CONNECT destination to the loopback address to dial.
func (p *egressProxy) resolve(ctx context.Context, dest string) (string, error) {
	host, portText, err := net.SplitHostPort(dest)
	if err != nil {
		return "", fmt.Errorf("not host:port: %w", err)
	}
	ip := net.ParseIP(host)
	if ip != nil && ip.IsLoopback() {
		return dest, nil // a webhook registered by URL on loopback
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return "", fmt.Errorf("port %q: %w", portText, err)
	}
	if ip == nil {
		return "", fmt.Errorf("%s is not an IP address: only Service ClusterIPs and loopback are routed", host)
	}
	svcs, err := p.client.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("listing Services: %w", err)
	}
	for i := range svcs.Items {
		svc := &svcs.Items[i]
		if !hasClusterIP(svc, host) {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			if int(sp.Port) == port && (sp.Protocol == "" || sp.Protocol == corev1.ProtocolTCP) {
				if p.backends == nil {
					return "", fmt.Errorf("Service %s/%s: no pod runner (Options.PodRunner) to serve it", svc.Namespace, svc.Name)
				}
				addr, err := p.backends.backend(svc, sp)
				if err != nil {
					return "", fmt.Errorf("Service %s/%s port %d: %w", svc.Namespace, svc.Name, port, err)
				}
				return addr, nil
			}
		}
		return "", fmt.Errorf("Service %s/%s has no TCP port %d", svc.Namespace, svc.Name, port)
	}
	return "", errors.New("no Service has this ClusterIP (only Service ClusterIPs and loopback are routed)")
}

func hasClusterIP(svc *corev1.Service, ip string) bool {
	if svc.Spec.ClusterIP == ip {
		return true
	}
	for _, c := range svc.Spec.ClusterIPs {
		if c == ip {
			return true
		}
	}
	return false
}

// lateBackends is a backendFinder set once the pod runner runs.
type lateBackends struct {
	mu sync.Mutex
	b  backendFinder
}

func (l *lateBackends) set(b backendFinder) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = b
}

func (l *lateBackends) backend(svc *corev1.Service, port corev1.ServicePort) (string, error) {
	l.mu.Lock()
	b := l.b
	l.mu.Unlock()
	if b == nil {
		return "", errors.New("no pod runner (Options.PodRunner) serves Services in this cluster")
	}
	return b.backend(svc, port)
}

// syncWriter serialises writes from the proxy's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
