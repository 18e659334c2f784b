// Package manager_test judges the Kueue resources by the real Kueue v0.17.0
// manager (its chart from the module cache, its pod run by testenv's pod
// runner): topology-aware scheduling places workloads, and an AdmissionCheck
// holds them. The parent package's tests judge the objects the provider
// writes against Kueue's CRDs alone.
package manager_test

import (
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// Topology labels of the fake nodes.
const (
	blockLabel = "example.com/block"
	rackLabel  = "example.com/rack"
	poolLabel  = "example.com/pool"
)

// Three fake 8-GPU nodes in two blocks: block b1 holds one node, block b2
// two (in two racks). Kueue v0.17 enables topology-aware scheduling by
// default (feature gate TopologyAwareScheduling, beta since 0.14).
func TestMain(m *testing.M) {
	pool := func(name, block, rack string) testenv.NodePool {
		return testenv.NodePool{Name: name, Count: 1, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3",
			Labels: map[string]string{poolLabel: "tas", blockLabel: block, rackLabel: rack}}
	}
	testenv.Main(m, testenv.Options{
		Controllers: []testenv.Controller{testenv.Kueue()},
		Nodes:       []testenv.NodePool{pool("b1-r1", "b1", "r1"), pool("b2-r1", "b2", "r1"), pool("b2-r2", "b2", "r2")},
	})
}
