package testenv

import (
	"context"

	"fmt"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/controlplane"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/nodes"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
	"io"
	"path/filepath"
)

// Versions of the components. Those built in tools/ must match the versions
// required by tools/go.mod (TestToolsVersions checks it); the others are built
// from their own modules (see EnsureBinaries). Binaries are cached by these names.
const (
	KubernetesVersion = controlplane.KubernetesVersion
	EtcdVersion       = controlplane.EtcdVersion
	KwokVersion       = nodes.KwokVersion
	KueueVersion      = podrunner.KueueVersion
)

// The versions of the controllers testenv runs that are the catalogue's
// defaults.
var (
	KubeRayVersion = podrunner.KubeRayVersion // github.com/ray-project/kuberay/ray-operator
	LWSVersion     = podrunner.LWSVersion     // sigs.k8s.io/lws
)

// ProviderModule is the module path of this repository's root go.mod.
const ProviderModule = binaries.ProviderModule

// Component names a binary testenv runs (and its process).
type Component string

const (
	APIServer         Component = controlplane.APIServer
	Etcd              Component = controlplane.Etcd
	ControllerManager Component = controlplane.ControllerManager
	Scheduler         Component = controlplane.Scheduler
	Kwok              Component = nodes.Kwok
	KueueManager      Component = "kueue"                      // podrunner.Kueue.Binary
	KubeRayOperator   Component = "kuberay-operator"           // podrunner.KubeRay.Binary
	LWSController     Component = "lws-controller"             // podrunner.LWS.Binary
	JobSetController  Component = "jobset-controller"          // podrunner.JobSet.Binary
	TrainerManager    Component = "trainer-controller-manager" // podrunner.Trainer.Binary
	MPIOperator       Component = "mpi-operator"               // podrunner.MPIOperator.Binary
	EPP               Component = "endpoint-picker"            // podrunner.EndpointPicker.Binary
	KServeManager     Component = "kserve-manager"             // podrunner.KServe.Binary
	KServeLLMISvc     Component = "kserve-llmisvc"             // podrunner.LLMISvc.Binary
	// Agent is the process that serves the egress socket and runs the pod
	// runner of a detached cluster: the calling program, run as
	// `<program> agent <dir>`, which must call RunAgent (cmd/testenv does).
	Agent Component = podrunner.Agent
)

// baseSpecs are the control plane's and kwok's.
func baseSpecs() []binaries.Spec {
	return []binaries.Spec{controlplane.EtcdSpec, controlplane.APIServerSpec, controlplane.ControllerManagerSpec, controlplane.SchedulerSpec, nodes.KwokSpec}
}

// specs are how each component is built.
func specs() map[Component]binaries.Spec {
	m := map[Component]binaries.Spec{}
	for _, s := range baseSpecs() {
		m[Component(s.Name)] = s
	}
	for _, s := range podrunner.AllSpecs() {
		m[Component(s.Name)] = s
	}
	return m
}

// AllComponents are every binary testenv knows: the control plane, kwok and
// every pod adapter's controller (`testenv build` builds them all).
func AllComponents() []Component {
	out := []Component{Etcd, APIServer, ControllerManager, Scheduler, Kwok}
	for _, s := range podrunner.AllSpecs() {
		out = append(out, Component(s.Name))
	}
	return out
}

// Binaries maps components to the paths of their built binaries.
type Binaries map[Component]string

// EnsureBinaries returns the paths of the given components' binaries in BinDir,
// building the missing ones first: the Kubernetes components and etcd with
// `go build` in <repo>/tools; kwok, both Kueue managers, JobSet, the Trainer,
// the endpoint picker and the MPI Operator in <repo>/tools/k8s-v0.36 or
// k8s-v0.35, one module per Kubernetes generation sharing its compiled
// dependencies; KubeRay, LWS and KServe with `go build` in their module's
// directory (package binaries; each component's Spec is beside the code
// that runs it).
// A lock file in BinDir makes concurrent callers (parallel test packages) wait
// for one build instead of running their own. Progress goes to log (os.Stderr
// when nil).
func EnsureBinaries(ctx context.Context, log io.Writer, components ...Component) (Binaries, error) {
	all := specs()
	var want []binaries.Spec
	for _, c := range components {
		s, ok := all[c]
		if !ok {
			return nil, fmt.Errorf("testenv: unknown component %q", c)
		}
		want = append(want, s)
	}
	return ensureSpecs(ctx, log, want...)
}

// EnsureAllBinaries builds (or finds cached) every binary testenv knows,
// every version of each (`testenv build`): both Kueue managers, for one,
// and the Pulumi CLI with its YAML language host (examples/pulumi).
// EnsureBinaries(AllComponents()...) would build one spec per name.
func EnsureAllBinaries(ctx context.Context, log io.Writer) (Binaries, error) {
	return ensureSpecs(ctx, log, append(append(baseSpecs(), podrunner.AllSpecs()...), binaries.PulumiCLI)...)
}

// ensureSpecs is EnsureBinaries of specs: the paths are keyed by binary name
// (the first spec of a name) and by binaries.Spec.Key ("kueue@v0.19.2").
func ensureSpecs(ctx context.Context, log io.Writer, want ...binaries.Spec) (Binaries, error) {
	paths, err := binaries.Ensure(ctx, log, want...)
	if err != nil {
		return nil, err
	}
	bins := Binaries{}
	for name, path := range paths {
		bins[Component(name)] = path
	}
	return bins, nil
}

// paths is bins keyed by binary name, as the packages take them.
func (bins Binaries) paths() binaries.Paths {
	out := binaries.Paths{}
	for c, p := range bins {
		out[string(c)] = p
	}
	return out
}

// RepoRoot returns the root of the provider repository: $TESTENV_REPO when set,
// else the nearest directory at or above the working directory whose go.mod
// declares ProviderModule.
func RepoRoot() (string, error) { return binaries.RepoRoot() }

// BinDir is where built binaries are cached:
// ${XDG_CACHE_HOME:-$HOME/.cache}/terraform-provider-aiplatform/bin.
func BinDir() (string, error) { return binaries.Dir() }

// ModuleDir returns the directory of a module version in the Go module cache,
// downloading it through the module proxy if needed.
func ModuleDir(ctx context.Context, modulePath, version string) (string, error) {
	return binaries.ModuleDir(ctx, modulePath, version)
}

// KueueCRDDir is the directory of Kueue's CRDs in the sigs.k8s.io/kueue module.
func KueueCRDDir(ctx context.Context) (string, error) {
	dir, err := ModuleDir(ctx, catalog.KueueModule, KueueVersion)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "config", "components", "crd", "bases"), nil
}

// KubeRayCRDDir is the directory of KubeRay's CRDs (RayCluster, RayJob,
// RayService, all ray.io/v1) in the ray-operator module.
func KubeRayCRDDir(ctx context.Context) (string, error) {
	return podrunner.KubeRay.Install.CRDs.Path(ctx)
}

// LWSCRDDir is the directory of the LeaderWorkerSet CRD in the sigs.k8s.io/lws
// module.
func LWSCRDDir(ctx context.Context) (string, error) {
	dir, err := ModuleDir(ctx, podrunner.LWSModule, LWSVersion)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "config", "crd", "bases"), nil
}

// InferencePoolCRDDir is the directory of the Gateway API Inference
// Extension's CRDs (InferencePool, inference.networking.k8s.io/v1, and
// InferencePoolImport) in its module, at the version whose endpoint picker
// testenv runs.
func InferencePoolCRDDir(ctx context.Context) (string, error) {
	dir, err := ModuleDir(ctx, podrunner.InferenceExtensionModule, podrunner.InferenceExtensionVersion)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "config", "crd", "bases"), nil
}

// LWSGroupVersion is the API of LeaderWorkerSets.
var LWSGroupVersion = schema.GroupVersion{Group: catalog.LWSKind.Group, Version: catalog.LWSKind.Version}

// Process is one running component, as recorded in a pids file.
type Process = process.Process

// PIDFile is the name of the file, in an environment's directory, that lists
// the processes of a detached environment.
const PIDFile = process.PIDFile

// WritePIDs records procs in <dir>/pids, atomically.
func WritePIDs(dir string, procs []Process) error { return process.WritePIDs(dir, procs) }

// ReadPIDs reads <dir>/pids; a missing file is no processes and no error.
func ReadPIDs(dir string) ([]Process, error) { return process.ReadPIDs(dir) }

// StopProcesses stops recorded processes in reverse order: SIGTERM to each
// process group, SIGKILL after a grace period.
func StopProcesses(procs []Process) { process.StopAll(procs) }
