// Package faultproxy is a loopback TCP proxy in front of an API server for
// fault tests.
package faultproxy

import (
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/controlplane"
)

// Proxy is a loopback TCP proxy in front of the API server for fault
// tests: it can hold every answer back (a slow or hung API server) or cut
// connections (a flaky network). TLS passes through untouched; the serving
// certificate is for 127.0.0.1, which the proxy also listens on.
type Proxy struct {
	Host       string // https://127.0.0.1:<port>
	Kubeconfig string // a kubeconfig like Env.Kubeconfig, pointing at the proxy

	ln     net.Listener
	target string
	delay  atomic.Int64 // nanoseconds before the server's bytes are passed on
	drop   atomic.Bool

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// New starts a proxy to the API server at host (https://127.0.0.1:<port>),
// with a kubeconfig that trusts ca and sends token; Close stops it.
func New(host string, ca []byte, token string) (*Proxy, error) {
	u, err := url.Parse(host)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: u.Host, conns: map[net.Conn]struct{}{}}
	p.Host = "https://" + ln.Addr().String()
	dir, err := os.MkdirTemp("", "testenv-proxy-")
	if err != nil {
		ln.Close()
		return nil, err
	}
	p.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := controlplane.WriteKubeconfig(p.Kubeconfig, p.Host, ca, token); err != nil {
		ln.Close()
		return nil, err
	}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// SetDelay holds every chunk the server sends back for d (0: none).
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// SetDrop makes the proxy close new and open connections at once.
func (p *Proxy) SetDrop(drop bool) {
	p.drop.Store(drop)
	if drop {
		p.closeConns()
	}
}

// Close stops the proxy and every connection through it.
func (p *Proxy) Close() {
	p.ln.Close()
	p.closeConns()
	p.wg.Wait()
	os.RemoveAll(filepath.Dir(p.Kubeconfig))
}

func (p *Proxy) closeConns() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

func (p *Proxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.drop.Load() {
			client.Close()
			continue
		}
		p.wg.Add(1)
		go p.pipe(client)
	}
}

func (p *Proxy) pipe(client net.Conn) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		client.Close()
		return
	}
	p.track(client, true)
	p.track(server, true)
	defer func() {
		p.track(client, false)
		p.track(server, false)
		client.Close()
		server.Close()
	}()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(server, client); done <- struct{}{} }()
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 {
				if d := time.Duration(p.delay.Load()); d > 0 {
					time.Sleep(d)
				}
				if _, werr := client.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		done <- struct{}{}
	}()
	<-done
}
