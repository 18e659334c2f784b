package podrunner

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// kubeletLogs is the kubelet endpoint of the fake nodes, as far as container
// logs go: kwok publishes its port as every node's kubelet port, the API
// server reaches it through the egress proxy (the nodes' address is
// 127.0.0.1) and asks GET /containerLogs/<namespace>/<pod>/<container> for
// `kubectl logs`. It serves the log files of the pods the runner ran (a
// Command's output, a controller's process log); any other pod has none (404,
// as kwok's own pods have no log). Its certificate is self-signed: the API
// server checks a kubelet's only with --kubelet-certificate-authority, which
// testenv does not set.
type kubeletLogs struct {
	dir string // the runner's pod directory: <namespace>_<pod>.log
	srv *http.Server
}

func startKubeletLogs(port int, dir string, logf func(string, ...any)) (*kubeletLogs, error) {
	cert, err := selfSigned()
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("testenv: the kubelet log endpoint: %w", err)
	}
	k := &kubeletLogs{dir: dir}
	k.srv = &http.Server{Handler: k, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := k.srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logf("kubelet log endpoint: %v", err)
		}
	}()
	logf("kubelet log endpoint on 127.0.0.1:%d (the fake nodes' kubelet port)", port)
	return k, nil
}

func (k *kubeletLogs) close() { _ = k.srv.Close() }

// ServeHTTP answers GET /containerLogs/<namespace>/<pod>/<container> with
// limitBytes and tailLines as the kubelet reads them.
func (k *kubeletLogs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, "/containerLogs/") || len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		http.Error(w, "testenv's kubelet serves only GET /containerLogs/<namespace>/<pod>/<container>", http.StatusNotFound)
		return
	}
	if strings.ContainsAny(parts[0]+parts[1], `/\`) || strings.Contains(parts[0]+parts[1], "..") {
		http.Error(w, "bad pod name", http.StatusBadRequest)
		return
	}
	data, err := os.ReadFile(filepath.Join(k.dir, parts[0]+"_"+parts[1]+".log"))
	if err != nil {
		http.Error(w, fmt.Sprintf("pod %s/%s: no log here (the pod runner did not run it)", parts[0], parts[1]), http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	if n, err := strconv.Atoi(q.Get("tailLines")); err == nil && n >= 0 {
		lines := bytes.SplitAfter(data, []byte("\n"))
		if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		data = bytes.Join(lines[max(0, len(lines)-n):], nil)
	}
	if n, err := strconv.Atoi(q.Get("limitBytes")); err == nil && n >= 0 && n < len(data) {
		data = data[:n]
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write(data)
}

// selfSigned is a fresh certificate for 127.0.0.1 (the kubelet endpoint, API stubs).
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "testenv-kubelet"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
