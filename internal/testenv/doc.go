// Package testenv runs a real, local Kubernetes control plane for acceptance tests
// and the demo, without Docker: etcd, kube-apiserver and, when scheduling is asked
// for, kube-controller-manager, kube-scheduler and kwok (which plays the kubelet of
// fake GPU nodes), and with Options.RunKueue the Kueue manager, whose webhooks the
// API server calls on loopback; likewise Options.RunKubeRay (the KubeRay operator)
// and Options.RunLWS (the LeaderWorkerSet controller), with their CRDs. Every
// process listens on 127.0.0.1 only, on free ports, with its state in one
// directory.
//
// The binaries are built from Go modules (tools/go.mod, or the component's own
// module) on first use and cached outside the repository, keyed by version; see
// EnsureBinaries.
//
// A test package uses it through Main:
//
//	func TestMain(m *testing.M) {
//		testenv.Main(m, testenv.Options{Nodes: []testenv.NodePool{{Name: "h100", Count: 2, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3"}}})
//	}
//
// and reaches the cluster with testenv.Current(). Setting TESTENV_KUBECONFIG runs
// the same tests against an existing cluster instead.
package testenv
