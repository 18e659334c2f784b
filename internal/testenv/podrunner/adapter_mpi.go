package podrunner

import (
	"context"
	"fmt"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// mpiOperatorAdapter runs the MPI Operator of a pod from its manifests
// (deploy/v2beta1/mpi-operator.yaml of the module: a Namespace, the MPIJob
// CRD, RBAC and a Deployment, no chart): image mpioperator/mpi-operator, run
// with the testenv-built operator (MPIOperatorVersion) and the container's
// own flags (-alsologtostderr --lock-namespace=mpi-operator in the
// manifests).
//
// What changes, and why:
//   - KUBECONFIG is the pod's kubeconfig, with its service account token (in
//     a pod: in-cluster configuration), so the operator works with the
//     manifests' RBAC. The operator prefers the KUBECONFIG environment
//     variable to its --kubeConfig flag, so the variable is what is set;
//   - KUBEFLOW_NAMESPACE, the default of --namespace (the namespaces it
//     watches), is the container's value or empty (all namespaces), never the
//     runner's own;
//   - --monitoring-port, when set, is a free port (the operator binds it on
//     all interfaces; no flag makes it loopback).
//
// The operator serves /healthz on the fixed port :8080 of all interfaces (a
// constant; no flag moves it) and exits when that port is taken. The
// manifests probe nothing, so nothing needs it; the adapter checks it is free
// before starting and otherwise reports why in the pod's status. Hence one
// MPI Operator per machine: its pods hold the machine lock "mpi-operator"
// (Exclusive), for which another test process's operator waits. It has no
// webhook; leader election uses --lock-namespace (default mpi-operator),
// which any namespace works with.
//
// It ships no chart: Install applies its manifest file.
var MPIOperator = &Adapter{
	Name:       "mpi-operator",
	Binary:     mpiOperatorSpec(MPIOperatorVersion, binaries.K8s036, "~1 min with tools/k8s-v0.36 built"),
	Alternates: []binaries.Spec{mpiOperatorSpec(MPIOperatorPreviousVersion, binaries.K8s035, "~1 min with tools/k8s-v0.35 built, ~4 alone")},
	Image:      regexp.MustCompile(`^((docker\.io/)?(mpioperator|kubeflow)/mpi-operator)[:@]`),
	Prepare:    prepareMPIOperatorPod,
	Exclusive:  MPIOperatorLock,
	Install: Install{
		Manifests: Source{Module: MPIOperatorModule, Version: MPIOperatorVersion, Dir: catalog.MPIOperatorManifest},
		Namespace: catalog.MPIOperator.Namespace, Serves: catalog.MPIOperator.Serves,
	},
	Answers: mpiOperatorAnswers,
}

// The MPI Operator's module and the version testenv builds and runs.
var (
	MPIOperatorModule  = catalog.MPIOperator.Module
	MPIOperatorVersion = catalog.ModuleVersion(catalog.MPIOperator.DefaultVersion)
	// MPIOperatorPreviousVersion is the default before MPIOperatorVersion,
	// still run for the upgrade from it: a pod whose image is tagged with
	// it (the release manifest's own tag) runs it.
	MPIOperatorPreviousVersion = "v0.8.0"
)

// mpiOperatorSpec is the MPI Operator of a version, built in dir (a tools
// module that requires that version).
func mpiOperatorSpec(version, dir, cold string) binaries.Spec {
	return binaries.Spec{Name: "mpi-operator", Version: version, Module: MPIOperatorModule, Package: MPIOperatorModule + "/cmd/mpi-operator", Dir: dir, ColdBuild: cold,
		LDFlags: "-X github.com/kubeflow/mpi-operator/pkg/version.Version=" + version} // unstamped, it reports v2.0.0
}

const (
	// MPIOperatorLock is the machine lock the operator's pods hold (its
	// fixed port); a test waits for it with process.MachineLock.
	MPIOperatorLock = "mpi-operator"
	// mpiOperatorHealthPort is the operator's fixed /healthz port.
	mpiOperatorHealthPort = 8080
)

func prepareMPIOperatorPod(lp *localPod) error {
	c := lp.container
	// Under the machine lock, a taken port is a copy of the operator this
	// process is stopping (its pod deleted and created again), the operator
	// this pod replaces in a rolling update, or a process that is not
	// testenv's.
	listen := func() error {
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", mpiOperatorHealthPort))
		if err == nil {
			_ = l.Close()
		}
		return err
	}
	err := listen()
	if err != nil && lp.predecessor() != nil {
		// A rolling update (a new image or version): in a cluster the new
		// pod has a network of its own and starts at once; here the old
		// operator holds :8080 until the Deployment removes its pod, which
		// it does once the new one is Ready. So the new pod reports Ready
		// and starts when the port is free.
		lp.logf("waiting for :%d, held by the MPI Operator pod this one replaces (a rolling update)", mpiOperatorHealthPort)
		lp.setStatus(lp.ctx, new(int32), true, "")
		for err != nil && lp.ctx.Err() == nil {
			time.Sleep(500 * time.Millisecond)
			err = listen()
		}
	}
	for wait := 0; err != nil && wait < 60; wait++ {
		time.Sleep(500 * time.Millisecond)
		err = listen()
	}
	if err != nil {
		return fmt.Errorf("the MPI Operator serves /healthz on the fixed port :%d (no flag moves it), which is taken on this machine: %v", mpiOperatorHealthPort, err)
	}
	lp.ports[mpiOperatorHealthPort] = mpiOperatorHealthPort

	// The image's entrypoint is the operator; a command names it, and
	// flags after it come before the args.
	args := append(slices.Clone(c.Command[min(len(c.Command), 1):]), c.Args...)
	for i, a := range args {
		// Go's flag package takes -flag and --flag, =value or a separate value.
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "monitoring-port" || !strings.HasPrefix(a, "-") {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		port, err := strconv.Atoi(value)
		if err != nil || port == 0 {
			continue
		}
		free, err := process.FreePorts(1)
		if err != nil {
			return err
		}
		lp.ports[int32(port)] = free[0]
		if hasValue {
			args[i] = "--monitoring-port=" + strconv.Itoa(free[0])
		} else {
			args[i+1] = strconv.Itoa(free[0])
		}
	}
	namespace := ""
	for _, e := range c.Env {
		switch {
		case e.Name != "KUBEFLOW_NAMESPACE":
		case e.ValueFrom == nil:
			namespace = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			pod, _, _ := lp.state()
			namespace = pod.Namespace
		default:
			return fmt.Errorf("KUBEFLOW_NAMESPACE from %v: the MPI Operator adapter takes a value or the pod's namespace", e.ValueFrom)
		}
	}
	lp.env = append(lp.env, "KUBECONFIG="+filepath.Join(lp.dir, "kubeconfig"), "KUBEFLOW_NAMESPACE="+namespace)
	lp.args = args
	return nil
}

// mpiOperatorAnswers returns nil once MPIJobs are served (the operator has
// no webhook; Install waits for its Deployment to be Available).
func mpiOperatorAnswers(ctx context.Context, client dynamic.Interface) error {
	_, err := client.Resource(schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
	return err
}

// predecessor is another MPI Operator pod of this runner, of the same
// namespace but another pod template (ReplicaSet), whose process runs: the
// old pod of a Deployment during a rolling update. (A second replica of
// the same template is not one: it waits for the port and fails.)
func (lp *localPod) predecessor() *localPod {
	lp.mu.Lock()
	ns, hash := lp.pod.Namespace, lp.pod.Labels["pod-template-hash"]
	lp.mu.Unlock()
	lp.runner.mu.Lock()
	defer lp.runner.mu.Unlock()
	for _, o := range lp.runner.pods {
		if o == lp || o.adapter != lp.adapter {
			continue
		}
		o.mu.Lock()
		running := o.proc != nil && o.pod.Namespace == ns && hash != "" && o.pod.Labels["pod-template-hash"] != hash
		o.mu.Unlock()
		if running {
			return o
		}
	}
	return nil
}
