package podrunner

import (
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"time"
)

// serveEmptyAPI serves, on a loopback port of its own, the discovery of an
// aggregated API group whose real server testenv does not run (Kueue's
// visibility server): the group and each version with no resources, every
// other request 503 with why. The API server's APIService (with
// insecureSkipTLSVerify, as the chart has it without cert-manager) is then
// Available and discovery complete. Without it, a registered APIService
// that nothing serves fails discovery for the whole cluster, and the
// namespace controller finalizes no namespace while any group fails: every
// namespace deleted after Kueue's install stayed Terminating (an MPI
// Operator's uninstall waited out its timeout). It stops when the pod ends
// (lp.done).
func (lp *localPod) serveEmptyAPI(group, why string, versions ...string) (int, error) {
	cert, err := selfSigned()
	if err != nil {
		return 0, err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return 0, err
	}
	srv := &http.Server{Handler: emptyAPI(group, why, versions), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-lp.done
		_ = srv.Close()
	}()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// emptyAPI is serveEmptyAPI's handler (versions preferred first).
func emptyAPI(group, why string, versions []string) http.Handler {
	type gv struct {
		GroupVersion string `json:"groupVersion"`
		Version      string `json:"version"`
	}
	var gvs []gv
	for _, v := range versions {
		gvs = append(gvs, gv{group + "/" + v, v})
	}
	apiGroup := map[string]any{"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": gvs, "preferredVersion": gvs[0]}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := strings.TrimSuffix(r.URL.Path, "/")
		var body any
		switch {
		case path == "/apis":
			body = map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": []any{apiGroup}}
		case path == "/apis/"+group:
			body = apiGroup
		default:
			for _, v := range gvs {
				if path == "/apis/"+v.GroupVersion {
					body = map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": v.GroupVersion, "resources": []any{}}
				}
			}
		}
		if body == nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure",
				"reason": "ServiceUnavailable", "code": http.StatusServiceUnavailable, "message": "testenv: " + why})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	})
}
