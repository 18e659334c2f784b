// Package manager_test judges the Kueue resources by the real Kueue v0.19.2
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
// two (in two racks). Kueue enables topology-aware scheduling by default
// (feature gate TopologyAwareScheduling, beta since 0.14). This package runs
// Kueue v0.19.2 (the provider's default chart); the other manager-judged
// packages run testenv's default, v0.17.0, so a cold CI builds both
// managers once.
func TestMain(m *testing.M) {
	pool := func(name, block, rack string) testenv.NodePool {
		return testenv.NodePool{Name: name, Count: 1, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3",
			Labels: map[string]string{poolLabel: "tas", blockLabel: block, rackLabel: rack}}
	}
	testenv.Main(m, testenv.Options{
		Controllers: []testenv.Controller{testenv.KueueAt("v0.19.2")},
		Nodes:       []testenv.NodePool{pool("b1-r1", "b1", "r1"), pool("b2-r1", "b2", "r1"), pool("b2-r2", "b2", "r2")},
	})
}
