package podrunner

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
)

// Adapter runs the controller of one container image as a local process.
// Adding a controller is one file, adapter_<name>.go, that declares an
// Adapter and one line in Adapters:
//
//   - Image: the container images it takes over (kwok leaves their pods to
//     the runner);
//   - Binary: how testenv builds the controller (module@version, main package,
//     -ldflags), cached by name and version (package binaries), when the
//     first pod of its image is to run (or a test asks for it);
//   - Prepare: how the pod's command line maps to a local one — it sets
//     lp.args and the moved ports from the container and its projected
//     volumes (adapter_config.go has the shared moves: --config files,
//     listen addresses, controller-runtime's webhook server);
//   - Install: the chart testenv's Options.Controllers installs (a directory
//     in the module cache, or a stand-in in testdata/charts) or, for a
//     controller that ships none, its manifest file; its namespace,
//     release name and default values; Answers: how to tell its webhooks
//     answer.
type Adapter struct {
	Name   string
	Binary binaries.Spec
	// Alternates are other versions of Binary the runner can run (Specs
	// lists them too; a set of built binaries holds each version under
	// binaries.Spec.Key). VersionOf says which version a container's image
	// asks for: "" runs Binary's, whatever set of binaries the runner has.
	// Without one, the image's tag names the version ("…:v0.11.1", the
	// leading v optional): Binary's or an Alternate's.
	Alternates []binaries.Spec
	VersionOf  func(image string) string
	Image      *regexp.Regexp // matches the container's image
	// Prepare sets lp.args and lp.ports from lp.container and the projected
	// volumes (lp.localPath), allocating loopback ports with
	// process.FreePorts. It runs once per pod, before the first start.
	Prepare func(lp *localPod) error

	// Install is how testenv's Options.Controllers installs the controller:
	// its chart, the release's namespace and name, default values.
	Install Install
	// Answers returns nil once the API server gets answers from the
	// controller's webhooks (dry-run creates through them); nil when it has
	// none to wait for.
	Answers func(ctx context.Context, client dynamic.Interface) error

	// Exclusive names a machine lock (process.MachineLock) for what the
	// controller cannot share with another copy of itself on this machine,
	// such as a fixed port: a pod of it waits for the lock before it starts
	// and holds it while it runs, so test packages that run at once (go test
	// -p 2) take turns instead of failing. "" when it shares nothing.
	Exclusive string

	// Container, when set, is the only container name the adapter takes
	// (with Image).
	Container string
	// OnDemand: a test's runner runs it only when the test names the
	// adapter in testenv's Options.Controllers or Options.Adapters, not for
	// Options.PodRunner alone (Specs leaves it out); a detached cluster's
	// runner (`testenv up --pod-runner`) runs every adapter. An on-demand
	// adapter with an empty Install runs pods the tests create themselves;
	// testenv installs nothing for it.
	OnDemand bool
	// runsCommand: the adapter runs the container's own command once
	// (Command) instead of a built binary.
	runsCommand bool
}

// takes reports whether the adapter runs container c.
func (a *Adapter) takes(c *corev1.Container) bool {
	return a.Image.MatchString(c.Image) && (a.Container == "" || a.Container == c.Name)
}

// Install says where a controller's chart or manifest file comes from and
// how it is installed.
type Install struct {
	Chart Source // the chart's directory
	// Manifests, for a controller that ships no chart (Chart unset), is a
	// multi-document YAML file that testenv server-side applies: its
	// Namespaces first, then CRDs, then the rest; Start then waits for the
	// Deployments in Namespace to be Available. Release is unused.
	Manifests Source
	// CRDs, when set, is a directory of CRDs copied into the chart's crds/
	// (a stand-in chart in testdata ships none).
	CRDs      Source
	Namespace string
	Release   string
	Values    map[string]any // default values
	// CRDChart, when set, is a chart of the controller's CRDs, installed
	// first as its own release, <Release>-crd, in Namespace (KServe ships
	// its CRDs as separate charts).
	CRDChart Source
	// WebhookCerts are webhook serving certificates testenv provides, as
	// cert-manager would for a chart that relies on it: before the install,
	// each Secret (tls.crt, tls.key, ca.crt) for the Service's DNS names in
	// Namespace, signed by a CA of the cluster's own; after it, that CA in
	// the caBundle of every webhook (admission and CRD conversion) that
	// calls the Service.
	WebhookCerts []WebhookCert
	// Omit are API groups whose objects the chart renders but testenv leaves
	// out of the release (helm.Options.Omit): "cert-manager.io" for KServe.
	Omit []string
	// Serves is an API group version the controller's CRDs serve: an
	// external cluster (TESTENV_KUBECONFIG) must serve it.
	Serves string
}

// WebhookCert is a webhook serving certificate testenv provides
// (Install.WebhookCerts): the Secret it is written to and the Service whose
// DNS names it is for.
type WebhookCert struct {
	Secret, Service string
}

// dryRunAnswered dry-run creates obj, which goes through the admission
// webhooks matching it: nil when they answered, allowing it or not
// (admission runs before the storage's existence check, so AlreadyExists is
// an answer too).
func dryRunAnswered(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource, obj map[string]any) error {
	u := &unstructured.Unstructured{Object: obj}
	_, err := client.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil || apierrors.IsAlreadyExists(err) || strings.Contains(err.Error(), "denied the request") {
		return nil
	}
	return fmt.Errorf("dry-run create of a %s: %w", u.GetKind(), err)
}

// Source is a directory (or a file) in a module of the Go module cache (Module@Version),
// or, with Module "", in this repository.
type Source struct {
	Module, Version, Dir string
}

// Path is the source's directory (or file) on this machine.
func (s Source) Path(ctx context.Context) (string, error) {
	root, err := binaries.RepoRoot()
	if s.Module != "" {
		root, err = binaries.ModuleDir(ctx, s.Module, s.Version)
	}
	if err != nil {
		return "", err
	}
	return filepath.Join(root, filepath.FromSlash(s.Dir)), nil
}

// ByName is the registered adapter of that name, nil if none.
func ByName(name string) *Adapter {
	for _, a := range Adapters {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// Adapters are the registered adapters, one line per controller; a runner
// runs those it is given, building each one's binary when its first pod is
// to run.
var Adapters = []*Adapter{
	Kueue,          // adapter_kueue.go
	LWS,            // adapter_lws.go
	KubeRay,        // adapter_kuberay.go
	JobSet,         // adapter_jobset.go
	Trainer,        // adapter_trainer.go
	MPIOperator,    // adapter_mpi.go
	EndpointPicker, // adapter_epp.go (on demand)
	KServe,         // adapter_kserve.go (on demand)
	LLMISvc,        // adapter_kserve.go (on demand)
}

// Specs are the binaries of every adapter that is not on demand: those
// Options.PodRunner's runner may build (each when its first pod runs).
func Specs() []binaries.Spec {
	var out []binaries.Spec
	for _, a := range Adapters {
		if !a.OnDemand {
			out = append(out, a.Binary)
			out = append(out, a.Alternates...)
		}
	}
	return out
}

// AllSpecs are the binaries of every adapter, on demand or not (`testenv
// build` builds them all).
func AllSpecs() []binaries.Spec {
	var out []binaries.Spec
	for _, a := range Adapters {
		out = append(out, a.Binary)
		out = append(out, a.Alternates...)
	}
	return out
}

// Installs reports whether testenv installs something for the adapter (a
// chart or a manifest file); an on-demand adapter may install nothing.
func (a *Adapter) Installs() bool {
	return a.Install.Chart != (Source{}) || a.Install.Manifests != (Source{})
}

// spec is the binary that runs container c: the version its image asks for
// (VersionOf: Binary or one of Alternates), else Binary. The runner builds
// it when the first pod needs it.
func (a *Adapter) spec(c *corev1.Container) (binaries.Spec, error) {
	if v := a.versionOf(c.Image); v != "" {
		for _, s := range a.versions() {
			if s.Version == v {
				return s, nil
			}
		}
		return binaries.Spec{}, fmt.Errorf("image %s asks for %s %s, which testenv does not build", c.Image, a.Binary.Name, v)
	}
	return a.Binary, nil
}

// versions are Binary and its Alternates.
func (a *Adapter) versions() []binaries.Spec {
	return append([]binaries.Spec{a.Binary}, a.Alternates...)
}

// versionOf is the version of Binary or an Alternate the image asks for
// (VersionOf, or by default its tag), "" for none.
func (a *Adapter) versionOf(image string) string {
	if a.VersionOf != nil {
		return a.VersionOf(image)
	}
	tag := "v" + strings.TrimPrefix(imageTag(image), "v")
	for _, s := range a.versions() {
		if s.Version == tag {
			return tag
		}
	}
	return ""
}

// imageTag is what follows an image's last ':' or '@' (its tag or
// digest), for the adapters' VersionOf; an image without either gives a
// string no version equals.
func imageTag(image string) string { return image[strings.LastIndexAny(image, ":@")+1:] }

// withCommands are the adapters and those of the commands.
func withCommands(adapters []*Adapter, cmds []Command) []*Adapter {
	out := slices.Clone(adapters)
	for _, c := range cmds {
		out = append(out, c.adapter())
	}
	return out
}

// ImagePattern is a regular expression matching the images the pod runner
// takes over with these adapters (for kwok's pod-ready stage to leave
// alone).
func ImagePattern(adapters []*Adapter) string {
	var alts []string
	for _, a := range adapters {
		alts = append(alts, "(?:"+a.Image.String()+")")
	}
	return strings.Join(alts, "|")
}
