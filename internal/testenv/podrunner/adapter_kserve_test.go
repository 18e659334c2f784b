package podrunner

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
)

// The KServe adapter takes the chart's manager container (not the
// kube-rbac-proxy beside it), drops --leader-elect, moves the webhook, probe
// and metrics ports, serves the projected Secret as controller-runtime's
// default certDir through TMPDIR, and passes POD_NAMESPACE and the
// container's literal environment.
func TestKServeAdapter(t *testing.T) {
	for _, tc := range []struct {
		a     *Adapter
		image string
		want  bool
	}{
		{KServe, "kserve/kserve-controller:v0.20.0", true},
		{KServe, "docker.io/kserve/kserve-controller@sha256:00", true},
		{KServe, "kserve/llmisvc-controller:v0.20.0", false},
		{LLMISvc, "kserve/llmisvc-controller:latest", true},
		{LLMISvc, "quay.io/brancz/kube-rbac-proxy:v0.18.0", false},
	} {
		if got := tc.a.takes(&corev1.Container{Name: "manager", Image: tc.image}); got != tc.want {
			t.Errorf("%s takes %s: %v, want %v", tc.a.Name, tc.image, got, tc.want)
		}
	}
	if KServe.takes(&corev1.Container{Name: "kube-rbac-proxy", Image: "kserve/kserve-controller:v0.20.0"}) {
		t.Error("KServe takes a container not named manager")
	}

	c := corev1.Container{
		Name: "manager", Image: "kserve/kserve-controller:v0.20.0", Command: []string{"/manager"},
		Args: []string{"--metrics-addr=127.0.0.1:8080", "--leader-elect"},
		Env: []corev1.EnvVar{
			{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			{Name: "SECRET_NAME", Value: "kserve-webhook-server-cert"},
		},
		Ports:          []corev1.ContainerPort{{Name: "webhook-server", ContainerPort: 9443}, {Name: "metrics", ContainerPort: 8080}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8081)}}},
	}
	lp := trainingPod(t, KServe, "serving", c, "")
	if err := prepareKServePod(lp); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(lp.args, "--leader-elect") {
		t.Errorf("args %q keep --leader-elect", lp.args)
	}
	for port, flag := range map[int32]string{9443: "--webhook-port=", 8081: "--health-probe-addr=127.0.0.1:", 8080: "--metrics-addr=127.0.0.1:"} {
		local := lp.ports[port]
		if local == 0 || local == int(port) {
			t.Errorf("container port %d not moved: %v", port, lp.ports)
			continue
		}
		if !slices.ContainsFunc(lp.args, func(a string) bool { return a == flag+strconv.Itoa(local) }) {
			t.Errorf("args %q lack %s%d", lp.args, flag, local)
		}
	}
	if got, err := lp.targetPort(intstr.FromString("webhook-server"), 443); err != nil || got != lp.ports[9443] {
		t.Errorf("Service targetPort webhook-server: %d, %v", got, err)
	}
	env := strings.Join(lp.env, " ")
	for _, want := range []string{"POD_NAMESPACE=serving", "SECRET_NAME=kserve-webhook-server-cert", "KUBECONFIG=" + filepath.Join(lp.dir, "kubeconfig")} {
		if !strings.Contains(env, want) {
			t.Errorf("env %q lacks %s", env, want)
		}
	}
	link, err := os.Readlink(filepath.Join(lp.dir, "tmp", "k8s-webhook-server", "serving-certs"))
	if err != nil || link != lp.mounts[webhookCertMount] {
		t.Errorf("certDir link %q (%v), want %s", link, err, lp.mounts[webhookCertMount])
	}
}

// PodRunner alone builds no OnRequest adapter's binary (KServe's cold build
// is long); every adapter's binary stays buildable (Specs), and the manager's
// spec builds the llmisvc controller in the same go build.
func TestOnRequestAdapters(t *testing.T) {
	for _, s := range DefaultSpecs() {
		if s.Module == KServeModule {
			t.Errorf("DefaultSpecs has %s", s.Key())
		}
	}
	if !containsAll(Specs(), []binaries.Spec{KServe.Binary, LLMISvc.Binary}) {
		t.Error("Specs lacks KServe's binaries")
	}
	if len(KServe.Binary.BuildsAlso) != 1 || KServe.Binary.BuildsAlso[0].Key() != LLMISvc.Binary.Key() {
		t.Errorf("KServe's manager does not build %s with it", LLMISvc.Binary.Key())
	}
}
