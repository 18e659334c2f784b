// Package testenv runs a real, local Kubernetes control plane for acceptance
// tests and the demo, without Docker, in the spirit of controller-runtime's
// envtest: every process listens on 127.0.0.1 only, on free ports, with its
// state in one directory. Env composes small packages with one job each:
//
//   - process: start and stop processes by PID (process groups, a
//     parent-death signal unless detached), pids files, free loopback ports;
//   - binaries: build the binaries from Go modules (tools/go.mod, or the
//     component's own module) on first use, cached outside the repository by
//     name and version, one builder at a time (a file lock);
//   - pki: the cluster's CA, serving and front-proxy certificates,
//     service-account keys and admin token;
//   - controlplane: etcd, kube-apiserver, kube-controller-manager,
//     kube-scheduler, kubeconfigs, CRDs;
//   - nodes: kwok (the kubelet of fake GPU nodes), node pools, a default
//     StorageClass with a hostPath provisioner;
//   - podrunner: the pod runner, which runs the real controller of pods whose
//     image an adapter knows as a local process, and the egress proxy through
//     which the API server reaches their webhooks; one adapter file per
//     controller (adapter_kueue.go, adapter_lws.go, adapter_kuberay.go,
//     adapter_jobset.go, adapter_trainer.go, adapter_mpi.go, adapter_epp.go — the
//     Gateway API Inference Extension's endpoint picker, on demand);
//   - faultproxy: a TCP proxy in front of the API server for fault tests.
//
// There is one way to run a controller: Options.Controllers installs its
// chart (Kueue(frameworks...), LWS(), KubeRay(), or ControllerOf(adapter)
// for any other adapter, e.g. ControllerOf(podrunner.JobSet)) with the Helm
// SDK, or server-side applies its manifest file when it ships no chart
// (podrunner.MPIOperator); the pod runner runs its pods, and Start waits until they are Ready and the
// controller's webhooks answer. `make cluster-up` and `make demo` use the
// same path (cmd/testenv).
//
// A test package uses it through Main:
//
//	func TestMain(m *testing.M) {
//		testenv.Main(m, testenv.Options{
//			Nodes:       []testenv.NodePool{{Name: "h100", Count: 2, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3"}},
//			Controllers: []testenv.Controller{testenv.Kueue()},
//		})
//	}
//
// and reaches the cluster with testenv.Current(). Setting TESTENV_KUBECONFIG runs
// the same tests against an existing cluster instead: nothing is started or
// installed; Start checks that the controllers asked for answer there.
package testenv
