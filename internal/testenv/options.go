package testenv

import (
	"io"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

// Options says what cluster Start brings up.
type Options struct {
	// Dir holds the cluster's state, certificates, kubeconfig and logs. It is
	// kept after Stop. Empty means a temporary directory, removed by Stop.
	// Stale state from an earlier cluster in Dir is removed first.
	Dir string

	// Scheduling also runs kube-controller-manager, kube-scheduler and kwok, so
	// that Pods are scheduled to (fake) nodes and Jobs run to completion, and a
	// default StorageClass whose claims bind (package nodes). Implied by Nodes.
	Scheduling bool

	// Nodes are kwok-managed fake nodes to create once the cluster is up.
	Nodes []NodePool

	// CRDDirs are directories of CustomResourceDefinition YAML files to apply
	// (create or update), waiting until each CRD is Established.
	CRDDirs []string

	// Controllers are the controllers the tests need running, installed in
	// order once the cluster is up, e.g.
	//
	//	Controllers: []testenv.Controller{testenv.KubeRay(), testenv.LWS(), testenv.Kueue("batch/job", "ray.io/raycluster")}
	//
	// Each one's chart is installed with the Helm SDK and its pods are run
	// by the pod runner (package podrunner) with the binary testenv built;
	// Start returns once they are Ready and the controller's webhooks
	// answer. Implies Egress and Scheduling and builds those controllers'
	// binaries only. With TESTENV_KUBECONFIG nothing is installed: Start
	// checks that the external cluster serves their APIs and that their
	// webhooks answer.
	Controllers []Controller

	// KubeControllers overrides kube-controller-manager's --controllers
	// (default DefaultControllers).
	KubeControllers []string

	// APIServerArgs are appended to kube-apiserver's flags, e.g. an
	// --egress-selector-config-file.
	APIServerArgs []string

	// Egress gives the API server a cluster network (package podrunner): its calls to
	// Services (webhooks, aggregated APIs) go through testenv's egress proxy
	// to the local processes of the pod runner.
	Egress bool

	// PodRunner runs, without installing anything, the real controller of
	// pods whose image testenv knows
	// (package podrunner.Adapters: Kueue, LWS, KubeRay, JobSet, Trainer, the
	// MPI Operator) as local processes, with the pod's own configuration and
	// Secrets, and makes the pod Ready when the process is. Implies Egress
	// and Scheduling. A controller's binary is built when its first pod is
	// to run (the pod waits, not Ready, and says so), not up front. The
	// endpoint picker and KServe's controllers are on demand: name them in
	// Controllers, or in Adapters to run them without installing; a
	// detached cluster (Detach) runs them too.
	PodRunner bool

	// Adapters are on-demand pod adapters (podrunner.KServe,
	// podrunner.LLMISvc) whose controllers the pod runner runs too, without
	// installing them (a test's own install does, e.g. aiplatform_kserve's
	// acceptance test). Implies the pod runner.
	Adapters []*podrunner.Adapter

	// Commands are containers the pod runner runs by their own command line
	// as local processes (podrunner.Command: an image pattern and a
	// container name), for test images whose command is a program on this
	// machine, e.g. `cat <recorded log>`. The process's output is the
	// container's log, served to the API server (`kubectl logs`) on the fake
	// nodes' kubelet port; its exit code ends the pod. Only these images are
	// run; the pods' other containers and pods are kwok's. Implies the pod
	// runner.
	Commands []Command

	// Detach starts the processes in their own session, without a parent-death
	// signal, so they outlive this process (`testenv up`), and keeps
	// <Dir>/pids up to date. Requires Dir. What would run inside this
	// process (the storage provisioner, the pod runner) runs in an agent
	// process instead (RunAgent).
	Detach bool

	// NodeLease is how long kwok's node leases last (kwok renews each at a
	// quarter of it); default 40s. Scale runs with thousands of nodes raise it
	// (the bench uses 10 minutes): at 40s, 5,000 nodes cost 500 lease writes a
	// second, more than one core of an idle 2-core machine.
	// kube-controller-manager's node-monitor grace period follows it.
	NodeLease time.Duration

	// Log receives progress messages; default os.Stderr.
	Log io.Writer

	// Timeout bounds each wait (a component's readiness, nodes Ready, CRDs
	// Established); default 2 minutes. Building binaries is not bounded by it.
	Timeout time.Duration
}
