package podrunner

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
)

// The Gateway API Inference Extension's module and the version of its
// endpoint picker testenv builds and runs.
var (
	InferenceExtensionModule  = catalog.InferenceExtension.Module
	InferenceExtensionVersion = catalog.ModuleVersion(catalog.InferenceExtension.DefaultVersion)
)

// The endpoint picker's default ports (its server.Options): the ext-proc
// gRPC server, the gRPC health server and controller-runtime's metrics.
const (
	eppGRPCPort, eppHealthPort, eppMetricsPort = 9002, 9003, 9090
)

// EndpointPicker runs the endpoint picker of an InferencePool's picker pod:
// images registry.k8s.io/gateway-api-inference-extension/lwepp (or its
// staging image), run with the testenv-built picker
// (cmd/lwepp of the module at InferenceExtensionVersion — v1.6.0's module
// ships only this lightweight, round-robin picker; the scoring picker moved
// out of it). The picker is not a controller with a chart of its own: the
// pods are the ones a test creates (aiplatform_inference_pool's Deployment),
// so Install is empty and testenv installs nothing for it.
//
// It is on demand (OnDemand): Options.PodRunner does not build it, only
// Options.Controllers naming it (testenv.EndpointPicker()).
//
// What changes, and why:
//   - --grpc-port, --grpc-health-port and --metrics-port move to free ports
//     (the picker listens on ":<port>", every interface: v1.6.0 has no flag
//     for the host); the container's ports 9002/9003/9090 (or the flags'
//     values) map to them, so the egress proxy and the runner's gRPC
//     readinessProbe reach the moved ports;
//   - --kubeconfig with the pod's service account token (in a pod:
//     in-cluster configuration), so the picker works with the Role the pod's
//     service account has.
var EndpointPicker = &Adapter{
	Name: "endpoint-picker",
	Binary: binaries.Spec{Name: "endpoint-picker", Version: InferenceExtensionVersion, Module: InferenceExtensionModule, Package: InferenceExtensionModule + "/cmd/lwepp",
		Dir: binaries.K8s036, ColdBuild: "~3 min alone, ~1 with tools/k8s-v0.36 built", LDFlags: "-X " + InferenceExtensionModule + "/version.BuildRef=" + InferenceExtensionVersion},
	Image:    regexp.MustCompile(`^(registry\.k8s\.io|us-central1-docker\.pkg\.dev/k8s-staging-images)/gateway-api-inference-extension/lwepp[:@]`),
	Prepare:  prepareEPPPod,
	OnDemand: true,
	Install:  Install{Serves: catalog.InferenceExtension.Serves},
}

func prepareEPPPod(lp *localPod) error {
	c := lp.container
	if tag := c.Image[strings.LastIndexAny(c.Image, ":@")+1:]; tag != InferenceExtensionVersion {
		lp.logf("image tag %s, but testenv runs the endpoint picker %s", tag, InferenceExtensionVersion)
	}
	// The image's entrypoint is /lwepp; a command naming it may carry flags.
	args := slices.Clone(c.Args)
	if len(c.Command) > 0 {
		if filepath.Base(c.Command[0]) != "lwepp" {
			return fmt.Errorf("container %s's command %s is not the picker (/lwepp)", c.Name, c.Command[0])
		}
		args = append(slices.Clone(c.Command[1:]), args...)
	}
	free, err := process.FreePorts(3)
	if err != nil {
		return err
	}
	for i, m := range []struct {
		flag string
		def  int
	}{{"--grpc-port", eppGRPCPort}, {"--grpc-health-port", eppHealthPort}, {"--metrics-port", eppMetricsPort}} {
		port, err := eppFlag(&args, m.flag, m.def, free[i])
		if err != nil {
			return err
		}
		lp.ports[int32(port)] = free[i]
	}
	lp.args = append(args, "--kubeconfig="+filepath.Join(lp.dir, "kubeconfig"))
	return nil
}

// eppFlag sets the integer flag to local in args (pflag: "--flag=v" or
// "--flag v"; the last one wins) and returns the port the container asked
// for (def when unset).
func eppFlag(args *[]string, flag string, def, local int) (int, error) {
	port, out := def, (*args)[:0:0]
	for i := 0; i < len(*args); i++ {
		a := (*args)[i]
		v, ok := strings.CutPrefix(a, flag+"=")
		if !ok && a == flag && i+1 < len(*args) {
			v, ok = (*args)[i+1], true
			i++
		}
		if !ok {
			out = append(out, a)
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("%s %q: %w", flag, v, err)
		}
		port = n
	}
	*args = append(out, fmt.Sprintf("%s=%d", flag, local))
	return port, nil
}
