package podrunner

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
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

// publishEndpoints keeps, until the pod ends, an EndpointSlice for each
// Service of the pod's namespace that selects the pod and targets
// containerPort: the API server's aggregator calls an APIService Available
// only when its Service has a ready endpoint on the port's name (it then
// reaches the Service through the egress proxy, by its ClusterIP, which is
// the slice's address: the runner's pods have no IP). The cluster runs no
// EndpointSlice controller; the slices are owned by the pod, so the garbage
// collector removes them with it.
func (lp *localPod) publishEndpoints(containerPort int32) {
	if lp.runner == nil { // (a unit test's pod)
		return
	}
	ctx, cancel := context.WithCancel(lp.runner.ctx)
	go func() {
		<-lp.done
		cancel()
	}()
	go func() {
		for ctx.Err() == nil {
			if err := lp.ensureEndpointSlices(ctx, containerPort); err != nil && ctx.Err() == nil {
				lp.logf("endpoints of port %d: %v", containerPort, err)
			}
			sleep(ctx, 5*time.Second)
		}
	}()
}

func (lp *localPod) ensureEndpointSlices(ctx context.Context, containerPort int32) error {
	pod, _, _ := lp.state()
	client := lp.runner.client
	svcs, err := client.CoreV1().Services(pod.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	portName := ""
	for _, p := range lp.container.Ports {
		if p.ContainerPort == containerPort {
			portName = p.Name
		}
	}
	for _, svc := range svcs.Items {
		ip := svc.Spec.ClusterIP
		if len(svc.Spec.Selector) == 0 || ip == "" || ip == corev1.ClusterIPNone || net.ParseIP(ip).To4() == nil ||
			!labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			t := sp.TargetPort
			if !(t.Type == intstr.String && t.StrVal != "" && t.StrVal == portName) &&
				!(t.Type == intstr.Int && t.IntVal == containerPort) && !(t.Type == intstr.Int && t.IntVal == 0 && sp.Port == containerPort) {
				continue
			}
			ready, name, protocol := true, sp.Name, sp.Protocol
			if protocol == "" {
				protocol = corev1.ProtocolTCP
			}
			slice := &discoveryv1.EndpointSlice{
				ObjectMeta: metav1.ObjectMeta{
					Name: svc.Name + "-testenv", Namespace: svc.Namespace,
					Labels:          map[string]string{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: "testenv.aiplatform.dev"},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}},
				},
				AddressType: discoveryv1.AddressTypeIPv4,
				Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
				Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &containerPort, Protocol: &protocol}},
			}
			if _, err := client.DiscoveryV1().EndpointSlices(svc.Namespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		}
	}
	return nil
}
