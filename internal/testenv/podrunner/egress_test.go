package podrunner

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
)

// The egress proxy maps CONNECT <ClusterIP>:<port> through the Service and its
// targetPort to the loopback port of a pod the runner runs, tunnels TLS end to
// end, passes loopback destinations through, and refuses the rest with 503
// and the reason.
func TestEgressProxyMapping(t *testing.T) {
	backend := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "webhook %s", r.URL.Path)
	}))
	defer backend.Close()
	backendPort := backend.Listener.Addr().(*net.TCPAddr).Port

	selector := map[string]string{"app": "kueue"}
	service := func(name, ip string, port int32, target intstr.IntOrString, sel map[string]string) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kueue-system", Name: name},
			Spec: corev1.ServiceSpec{ClusterIP: ip, ClusterIPs: []string{ip}, Selector: sel,
				Ports: []corev1.ServicePort{{Port: port, TargetPort: target, Protocol: corev1.ProtocolTCP}}},
		}
	}
	client := fake.NewClientset(
		service("kueue-webhook-service", "10.0.0.10", 443, intstr.FromString("webhook-server"), selector),
		service("kueue-visibility-server", "10.0.0.11", 443, intstr.FromInt32(8082), selector),
		service("nobody", "10.0.0.12", 443, intstr.FromInt32(9443), map[string]string{"app": "other"}),
		service("by-number", "10.0.0.13", 8443, intstr.FromInt32(9443), selector),
	)

	r := newPodRunner(client, "", nil, t.TempDir(), nil, nil, t.Logf)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kueue-system", Name: "kueue-0", UID: types.UID("u1"), Labels: map[string]string{"app": "kueue", "pod-template-hash": "x"}}}
	lp := &localPod{
		runner: r, adapter: Kueue, pod: pod,
		container: &corev1.Container{Name: "manager", Ports: []corev1.ContainerPort{{Name: "webhook-server", ContainerPort: 9443}, {Name: "visibility", ContainerPort: 8082}}},
		ports:     map[int32]int{9443: backendPort},
		unserved:  map[int32]string{8082: "the visibility server is off"},
		ready:     true,
		proc:      process.Running(make(chan struct{})), // running
	}
	r.pods[pod.UID] = lp

	dir := t.TempDir()
	var logged []string
	logFile := filepath.Join(dir, "egress.log")
	f, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	socket := filepath.Join(dir, "egress.sock")
	p, err := startEgressProxy(socket, client, r, func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }, f)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()

	// connect sends CONNECT dest over the socket and returns the response
	// and, on 200, the tunnel.
	connect := func(t *testing.T, dest string) (*http.Response, string, net.Conn) {
		t.Helper()
		conn, err := net.Dial("unix", socket)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", dest, dest)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			conn.Close()
			return resp, string(body), nil
		}
		return resp, "", conn
	}
	// get sends a GET through the tunnel with TLS, as the API server would.
	get := func(t *testing.T, conn net.Conn, path string) string {
		t.Helper()
		defer conn.Close()
		tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true})
		_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(tc, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path)
		resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}

	t.Run("service by port name", func(t *testing.T) {
		resp, body, conn := connect(t, "10.0.0.10:443")
		if conn == nil {
			t.Fatalf("CONNECT: %s %s", resp.Status, body)
		}
		if got := get(t, conn, "/validate-kueue"); got != "webhook /validate-kueue" {
			t.Errorf("through the tunnel: %q", got)
		}
	})
	t.Run("service by port number", func(t *testing.T) {
		_, body, conn := connect(t, "10.0.0.13:8443")
		if conn == nil {
			t.Fatalf("CONNECT: %s", body)
		}
		if got := get(t, conn, "/x"); got != "webhook /x" {
			t.Errorf("through the tunnel: %q", got)
		}
	})
	t.Run("loopback passes through", func(t *testing.T) {
		_, body, conn := connect(t, fmt.Sprintf("127.0.0.1:%d", backendPort))
		if conn == nil {
			t.Fatalf("CONNECT: %s", body)
		}
		if got := get(t, conn, "/y"); got != "webhook /y" {
			t.Errorf("through the tunnel: %q", got)
		}
	})
	for _, c := range []struct{ name, dest, want string }{
		{"unknown ClusterIP", "10.0.0.99:443", "no Service has this ClusterIP"},
		{"unknown port", "10.0.0.10:80", "Service kueue-system/kueue-webhook-service has no TCP port 80"},
		{"unserved container port", "10.0.0.11:443", "container port 8082 is not served: the visibility server is off"},
		{"no pod matches", "10.0.0.12:443", "no pod run by testenv's pod runner matches the selector app=other"},
		{"not an IP", "example.com:443", "not an IP address"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body, conn := connect(t, c.dest)
			if conn != nil {
				conn.Close()
				t.Fatalf("CONNECT %s: 200, want 503", c.dest)
			}
			if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, c.want) || !strings.Contains(body, c.dest) {
				t.Errorf("CONNECT %s: %s %q, want 503 naming the destination and %q", c.dest, resp.Status, body, c.want)
			}
		})
	}

	t.Run("a running pod that is not Ready still serves when no pod is Ready", func(t *testing.T) {
		lp.mu.Lock()
		lp.ready = false
		lp.mu.Unlock()
		defer func() { lp.mu.Lock(); lp.ready = true; lp.mu.Unlock() }()
		_, body, conn := connect(t, "10.0.0.10:443")
		if conn == nil {
			t.Fatalf("CONNECT: %s", body)
		}
		conn.Close()
	})
	t.Run("a pod whose process exited does not serve", func(t *testing.T) {
		lp.mu.Lock()
		running := lp.proc
		done := make(chan struct{})
		exited := process.Running(done)
		close(done)
		lp.proc, lp.ready = exited, false
		lp.mu.Unlock()
		defer func() { lp.mu.Lock(); lp.proc, lp.ready = running, true; lp.mu.Unlock() }()
		resp, body, conn := connect(t, "10.0.0.10:443")
		if conn != nil {
			conn.Close()
			t.Fatal("CONNECT to a pod without a process: 200")
		}
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "process is not running") {
			t.Errorf("%s %q", resp.Status, body)
		}
	})

	log, _ := os.ReadFile(logFile)
	if !strings.Contains(string(log), "CONNECT 10.0.0.99:443 refused (503)") || !strings.Contains(string(log), "CONNECT 10.0.0.10:443 → 127.0.0.1:") {
		t.Errorf("egress.log lacks the refusal or the mapping:\n%s", log)
	}
	if len(logged) == 0 || !strings.Contains(strings.Join(logged, "\n"), "10.0.0.99:443") {
		t.Errorf("the Env's log lacks the first refusal: %q", logged)
	}
}

// The Kueue adapter runs the chart's container with the chart's config file,
// moving the ports and paths that would collide and nothing else.
func TestKueueAdapterPrepare(t *testing.T) {
	dir := t.TempDir()
	configDir := filepath.Join(dir, "volumes", "manager-config")
	if err := os.MkdirAll(configDir, 0o700); err != nil {
		t.Fatal(err)
	}
	chartConfig := `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health:
  healthProbeBindAddress: :8081
metrics:
  bindAddress: :8443
webhook:
  port: 9443
leaderElection:
  leaderElect: true
  resourceName: c1f6bfd2.kueue.x-k8s.io
integrations:
  frameworks: ["batch/job"]
internalCertManagement:
  enable: true
  webhookServiceName: kueue-webhook-service
  webhookSecretName: kueue-webhook-server-cert
`
	if err := os.WriteFile(filepath.Join(configDir, "controller_manager_config.yaml"), []byte(chartConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	lp := &localPod{
		adapter: Kueue, dir: dir,
		pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kueue-system", Name: "kueue-0"}},
		container: &corev1.Container{
			Name: "manager", Image: "registry.k8s.io/kueue/kueue:" + KueueVersion,
			Args: []string{"--config=/controller_manager_config.yaml", "--zap-log-level=2", "--feature-gates=TopologyAwareScheduling=true"},
		},
		mounts: map[string]string{
			"/controller_manager_config.yaml":       filepath.Join(configDir, "controller_manager_config.yaml"),
			"/tmp/k8s-webhook-server/serving-certs": filepath.Join(dir, "volumes", "cert"),
			"/visibility":                           filepath.Join(dir, "volumes", "visibility"),
		},
		ports: map[int32]int{}, unserved: map[int32]string{}, done: make(chan struct{}),
	}
	defer close(lp.done) // stops the visibility stub
	if !Kueue.Image.MatchString(lp.container.Image) || !Kueue.Image.MatchString("us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue:release-0.17") ||
		Kueue.Image.MatchString("registry.k8s.io/kueue/kueueviz-backend:v0.17.0") {
		t.Fatal("the image pattern should match Kueue's manager image only")
	}
	if err := prepareKueuePod(lp); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(dir, "controller_manager_config.yaml")
	want := []string{"--config=" + local, "--zap-log-level=2", "--feature-gates=TopologyAwareScheduling=true,VisibilityOnDemand=false", "--kubeconfig=" + filepath.Join(dir, "kubeconfig")}
	if strings.Join(lp.args, " ") != strings.Join(want, " ") {
		t.Errorf("args\n got %q\nwant %q", lp.args, want)
	}
	for _, port := range []int32{9443, 8081, 8443} {
		if lp.ports[port] == 0 {
			t.Errorf("container port %d not moved: %v", port, lp.ports)
		}
	}
	// The visibility API's discovery is served, with no resources (its
	// APIService Available, the cluster's discovery complete).
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	defer tr.CloseIdleConnections()
	for path, want := range map[string]int{
		"/apis/visibility.kueue.x-k8s.io/v1beta1": http.StatusOK,
		"/apis/visibility.kueue.x-k8s.io/v1beta2": http.StatusOK,
		"/apis": http.StatusOK,
		"/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/a/pendingworkloads": http.StatusServiceUnavailable,
	} {
		resp, err := (&http.Client{Transport: tr}).Get(fmt.Sprintf("https://127.0.0.1:%d%s", lp.ports[8082], path))
		if err != nil {
			t.Fatalf("the visibility port: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || (want == http.StatusOK && !strings.Contains(string(body), "visibility.kueue.x-k8s.io")) {
			t.Errorf("GET %s: %d %s, want %d", path, resp.StatusCode, body, want)
		}
	}
	data, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Namespace string `json:"namespace"`
		Webhook   struct {
			Host    string `json:"host"`
			Port    int    `json:"port"`
			CertDir string `json:"certDir"`
		} `json:"webhook"`
		Health struct {
			Addr string `json:"healthProbeBindAddress"`
		} `json:"health"`
		Metrics struct {
			Addr string `json:"bindAddress"`
		} `json:"metrics"`
		LeaderElection struct {
			LeaderElect       bool   `json:"leaderElect"`
			ResourceName      string `json:"resourceName"`
			ResourceNamespace string `json:"resourceNamespace"`
		} `json:"leaderElection"`
		InternalCertManagement struct {
			WebhookSecretName string `json:"webhookSecretName"`
		} `json:"internalCertManagement"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Namespace != "kueue-system" || cfg.Webhook.Host != "127.0.0.1" || cfg.Webhook.Port != lp.ports[9443] ||
		cfg.Webhook.CertDir != filepath.Join(dir, "volumes", "cert") ||
		cfg.Health.Addr != fmt.Sprintf("127.0.0.1:%d", lp.ports[8081]) || cfg.Metrics.Addr != fmt.Sprintf("127.0.0.1:%d", lp.ports[8443]) {
		t.Errorf("moved settings wrong:\n%s", data)
	}
	if !cfg.LeaderElection.LeaderElect || cfg.LeaderElection.ResourceNamespace != "kueue-system" || cfg.LeaderElection.ResourceName != "c1f6bfd2.kueue.x-k8s.io" || cfg.InternalCertManagement.WebhookSecretName != "kueue-webhook-server-cert" {
		t.Errorf("the chart's other settings should be kept:\n%s", data)
	}
}
