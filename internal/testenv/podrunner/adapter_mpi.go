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
	Name: "mpi-operator",
	Binary: binaries.Spec{Name: "mpi-operator", Version: MPIOperatorVersion, Module: MPIOperatorModule, Package: MPIOperatorModule + "/cmd/mpi-operator", Dir: binaries.K8s035, ColdBuild: "~4 min",
		LDFlags: "-X github.com/kubeflow/mpi-operator/pkg/version.Version=" + MPIOperatorVersion}, // unstamped, it reports v2.0.0
	Image:     regexp.MustCompile(`^((docker\.io/)?(mpioperator|kubeflow)/mpi-operator)[:@]`),
	Prepare:   prepareMPIOperatorPod,
	Exclusive: MPIOperatorLock,
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
)

const (
	// MPIOperatorLock is the machine lock the operator's pods hold (its
	// fixed port); a test waits for it with process.MachineLock.
	MPIOperatorLock = "mpi-operator"
	// mpiOperatorHealthPort is the operator's fixed /healthz port.
	mpiOperatorHealthPort = 8080
)

func prepareMPIOperatorPod(lp *localPod) error {
	c := lp.container
	if tag := strings.TrimPrefix(c.Image[strings.LastIndexAny(c.Image, ":@")+1:], "v"); tag != strings.TrimPrefix(MPIOperatorVersion, "v") {
		lp.logf("image tag %s, but testenv runs the MPI Operator %s", tag, MPIOperatorVersion)
	}
	// Under the machine lock, a taken port is a copy of the operator this
	// process is stopping (its pod deleted and created again), or a process
	// that is not testenv's: a few seconds tell which.
	l, err := net.Listen("tcp", fmt.Sprintf(":%d", mpiOperatorHealthPort))
	for wait := 0; err != nil && wait < 60; wait++ {
		time.Sleep(500 * time.Millisecond)
		l, err = net.Listen("tcp", fmt.Sprintf(":%d", mpiOperatorHealthPort))
	}
	if err != nil {
		return fmt.Errorf("the MPI Operator %s serves /healthz on the fixed port :%d (no flag moves it), which is taken on this machine: %v", MPIOperatorVersion, mpiOperatorHealthPort, err)
	}
	_ = l.Close()
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
