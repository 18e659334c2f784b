package podrunner

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// trainingPod is a localPod of a chart's controller container whose
// --config file (content cfg, mounted at /controller_manager_config.yaml)
// and webhook Secret (mounted at webhookCertMount) are projected under dir.
func trainingPod(t *testing.T, a *Adapter, namespace string, c corev1.Container, cfg string) *localPod {
	t.Helper()
	dir := t.TempDir()
	configDir := filepath.Join(dir, "volumes", "manager-config")
	if err := os.MkdirAll(configDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(configDir, "controller_manager_config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return &localPod{
		adapter: a, dir: dir, container: &c,
		pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: a.Name + "-0"}},
		mounts: map[string]string{
			"/controller_manager_config.yaml": filepath.Join(configDir, "controller_manager_config.yaml"),
			webhookCertMount:                  filepath.Join(dir, "volumes", "webhook-cert"),
		},
		ports: map[int32]int{}, unserved: map[int32]string{},
	}
}

// localConfig reads the configuration the adapter wrote for the process.
func localConfig(t *testing.T, lp *localPod) map[string]any {
	t.Helper()
	i := slices.IndexFunc(lp.args, func(a string) bool { return strings.HasPrefix(a, "--config=") })
	if i < 0 {
		t.Fatalf("no --config in %q", lp.args)
	}
	data, err := os.ReadFile(strings.TrimPrefix(lp.args[i], "--config="))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func withFixedCertDir(t *testing.T) string {
	t.Helper()
	old := fixedWebhookCertDir
	fixedWebhookCertDir = filepath.Join(t.TempDir(), "k8s-webhook-server", "serving-certs")
	t.Cleanup(func() { fixedWebhookCertDir = old })
	return fixedWebhookCertDir
}

// The JobSet adapter moves the webhook, probe and metrics ports, points
// certDir at the projected Secret, sets the lease namespace, links the
// rotator's fixed certificate path to the pod's, and refuses namespaces other
// than jobset-system.
func TestJobSetAdapter(t *testing.T) {
	fixed := withFixedCertDir(t)
	for image, want := range map[string]bool{
		"us-central1-docker.pkg.dev/k8s-staging-images/jobset/jobset:main": true,
		"registry.k8s.io/jobset/jobset:v0.12.0":                            true,
		"registry.k8s.io/jobset/jobset-in-place-restart-agent:v0.12.0":     false,
	} {
		if JobSet.Image.MatchString(image) != want {
			t.Errorf("image %s: match %v, want %v", image, !want, want)
		}
	}
	c := corev1.Container{
		Name: "controller", Image: "us-central1-docker.pkg.dev/k8s-staging-images/jobset/jobset:main",
		Args: []string{"--zap-log-level=2", "--config=/controller_manager_config.yaml"},
	}
	cfg := "apiVersion: config.jobset.x-k8s.io/v1alpha1\nkind: Configuration\nleaderElection:\n  leaderElect: true\ninternalCertManagement:\n  enable: true\n"
	if err := prepareJobSetPod(trainingPod(t, JobSet, "default", c, cfg)); err == nil || !strings.Contains(err.Error(), "jobset-system") {
		t.Errorf("JobSet in namespace default: %v, want a refusal naming jobset-system", err)
	}
	lp := trainingPod(t, JobSet, "jobset-system", c, cfg)
	if err := prepareJobSetPod(lp); err != nil {
		t.Fatal(err)
	}
	got := localConfig(t, lp)
	webhook := got["webhook"].(map[string]any)
	if webhook["host"] != "127.0.0.1" || int(webhook["port"].(float64)) != lp.ports[9443] || webhook["certDir"] != filepath.Join(lp.dir, "volumes", "webhook-cert") {
		t.Errorf("webhook %v, ports %v", webhook, lp.ports)
	}
	for port, addr := range map[int32]any{8081: got["health"].(map[string]any)["healthProbeBindAddress"], 8443: got["metrics"].(map[string]any)["bindAddress"]} {
		if lp.ports[port] == 0 || addr != "127.0.0.1:"+strconv.Itoa(lp.ports[port]) {
			t.Errorf("port %d: moved to %v, listens on %v", port, lp.ports[port], addr)
		}
	}
	if ns := got["leaderElection"].(map[string]any)["resourceNamespace"]; ns != "jobset-system" {
		t.Errorf("leaderElection.resourceNamespace %v", ns)
	}
	if target, err := os.Readlink(filepath.Join(fixed, "tls.crt")); err != nil || target != filepath.Join(lp.dir, "volumes", "webhook-cert", "tls.crt") {
		t.Errorf("the fixed tls.crt links to %q (%v)", target, err)
	}
	if want := "--kubeconfig=" + filepath.Join(lp.dir, "kubeconfig"); lp.args[0] != "--zap-log-level=2" || lp.args[len(lp.args)-1] != want {
		t.Errorf("args %q", lp.args)
	}
}

// The Trainer adapter moves the four ports in the strictly decoded
// configuration without adding fields, gives the process a TMPDIR in which
// controller-runtime's default certDir is the projected Secret, and refuses
// namespaces other than kubeflow-system.
func TestTrainerAdapter(t *testing.T) {
	fixed := withFixedCertDir(t)
	if !Trainer.Image.MatchString("ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.3.0") ||
		Trainer.Image.MatchString("ghcr.io/kubeflow/trainer/data-cache:v2.3.0") {
		t.Error("the image pattern should match the controller manager's image only")
	}
	c := corev1.Container{Name: "manager", Image: "ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.3.0", Args: []string{"--config=/controller_manager_config.yaml"}}
	cfg := `apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
health:
  healthProbeBindAddress: ":8081"
metrics:
  bindAddress: ":8443"
  secureServing: true
webhook:
  port: 9443
  host: ""
leaderElection:
  leaderElect: true
  resourceNamespace: ""
certManagement:
  enable: true
statusServer:
  port: 10443
`
	if err := prepareTrainerPod(trainingPod(t, Trainer, "default", c, cfg)); err == nil || !strings.Contains(err.Error(), "kubeflow-system") {
		t.Errorf("Trainer in namespace default: %v, want a refusal naming kubeflow-system", err)
	}
	lp := trainingPod(t, Trainer, "kubeflow-system", c, cfg)
	if err := prepareTrainerPod(lp); err != nil {
		t.Fatal(err)
	}
	got := localConfig(t, lp)
	webhook := got["webhook"].(map[string]any)
	if len(webhook) != 2 || webhook["host"] != "127.0.0.1" || int(webhook["port"].(float64)) != lp.ports[9443] {
		t.Errorf("webhook %v (Trainer decodes strictly: only port and host), ports %v", webhook, lp.ports)
	}
	if p := int(got["statusServer"].(map[string]any)["port"].(float64)); p == 0 || p != lp.ports[10443] {
		t.Errorf("statusServer.port %d, ports %v", p, lp.ports)
	}
	for port, addr := range map[int32]any{8081: got["health"].(map[string]any)["healthProbeBindAddress"], 8443: got["metrics"].(map[string]any)["bindAddress"]} {
		if lp.ports[port] == 0 || addr != "127.0.0.1:"+strconv.Itoa(lp.ports[port]) {
			t.Errorf("port %d: moved to %v, listens on %v", port, lp.ports[port], addr)
		}
	}
	if ns := got["leaderElection"].(map[string]any)["resourceNamespace"]; ns != "kubeflow-system" {
		t.Errorf("leaderElection.resourceNamespace %v", ns)
	}
	tmp := filepath.Join(lp.dir, "tmp")
	if !slices.Contains(lp.env, "TMPDIR="+tmp) {
		t.Errorf("env %q has no TMPDIR=%s", lp.env, tmp)
	}
	if target, err := os.Readlink(filepath.Join(tmp, "k8s-webhook-server", "serving-certs")); err != nil || target != filepath.Join(lp.dir, "volumes", "webhook-cert") {
		t.Errorf("$TMPDIR/k8s-webhook-server/serving-certs links to %q (%v)", target, err)
	}
	if _, err := os.Readlink(filepath.Join(fixed, "tls.crt")); err != nil {
		t.Errorf("the fixed tls.crt: %v", err)
	}
}

// The MPI Operator adapter keeps the manifest's flags, moves
// --monitoring-port, and sets KUBECONFIG and KUBEFLOW_NAMESPACE.
func TestMPIOperatorAdapter(t *testing.T) {
	for image, want := range map[string]bool{
		"mpioperator/mpi-operator:0.8.0":           true,
		"docker.io/mpioperator/mpi-operator:0.8.0": true,
		"mpioperator/mpi-pi:openmpi":               false,
		"mpioperator/openmpi-builder:0.8.0":        false,
	} {
		if MPIOperator.Image.MatchString(image) != want {
			t.Errorf("image %s: match %v, want %v", image, !want, want)
		}
	}
	c := corev1.Container{
		Name: "mpi-operator", Image: "mpioperator/mpi-operator:0.8.0",
		Args: []string{"-alsologtostderr", "--lock-namespace=mpi-operator", "--monitoring-port", "9090"},
		Env:  []corev1.EnvVar{{Name: "KUBEFLOW_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
	}
	lp := trainingPod(t, MPIOperator, "mpi-operator", c, "")
	if l, err := net.Listen("tcp", fmt.Sprintf(":%d", mpiOperatorHealthPort)); err != nil {
		t.Skipf("port %d is taken here: %v", mpiOperatorHealthPort, err)
	} else {
		_ = l.Close()
	}
	if err := prepareMPIOperatorPod(lp); err != nil {
		t.Fatal(err)
	}
	want := []string{"-alsologtostderr", "--lock-namespace=mpi-operator", "--monitoring-port", strconv.Itoa(lp.ports[9090])}
	if !slices.Equal(lp.args, want) || lp.ports[9090] == 9090 {
		t.Errorf("args %q, want %q", lp.args, want)
	}
	for _, e := range []string{"KUBECONFIG=" + filepath.Join(lp.dir, "kubeconfig"), "KUBEFLOW_NAMESPACE=mpi-operator"} {
		if !slices.Contains(lp.env, e) {
			t.Errorf("env %q has no %s", lp.env, e)
		}
	}
	if lp.ports[mpiOperatorHealthPort] != mpiOperatorHealthPort {
		t.Errorf("the fixed health port is not reported as served: %v", lp.ports)
	}
}
