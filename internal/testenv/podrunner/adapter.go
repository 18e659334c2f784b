package podrunner

import (
	"regexp"
	"strings"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
)

// Adapter runs the controller of one container image as a local process.
// Adding a controller is one file, adapter_<name>.go, that declares an
// Adapter and one line in Adapters:
//
//   - Image: the container images it takes over (kwok leaves their pods to
//     the runner);
//   - Binary: how testenv builds the controller (module@version, main package,
//     -ldflags), cached by name and version (package binaries);
//   - Prepare: how the pod's command line maps to a local one — it sets
//     lp.args and the moved ports from the container and its projected
//     volumes (adapter_config.go has the shared moves: --config files,
//     listen addresses, controller-runtime's webhook server).
type Adapter struct {
	Name   string
	Binary binaries.Spec
	Image  *regexp.Regexp // matches the container's image
	// Prepare sets lp.args and lp.ports from lp.container and the projected
	// volumes (lp.localPath), allocating loopback ports with
	// process.FreePorts. It runs once per pod, before the first start.
	Prepare func(lp *localPod) error
}

// Adapters are the registered adapters, one line per controller; the runner
// uses those whose binary it has.
var Adapters = []*Adapter{
	Kueue,   // adapter_kueue.go
	LWS,     // adapter_lws.go
	KubeRay, // adapter_kuberay.go
}

// Specs are the binaries of every adapter.
func Specs() []binaries.Spec {
	var out []binaries.Spec
	for _, a := range Adapters {
		out = append(out, a.Binary)
	}
	return out
}

// active are the adapters whose binary is in bins.
func active(bins binaries.Paths) []*Adapter {
	var out []*Adapter
	for _, a := range Adapters {
		if bins[a.Binary.Name] != "" {
			out = append(out, a)
		}
	}
	return out
}

// ImagePattern is a regular expression matching the images the pod runner
// takes over with the binaries in bins (for kwok's pod-ready stage to leave
// alone).
func ImagePattern(bins binaries.Paths) string {
	var alts []string
	for _, a := range active(bins) {
		alts = append(alts, "(?:"+a.Image.String()+")")
	}
	return strings.Join(alts, "|")
}
