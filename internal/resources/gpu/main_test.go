package gpu_test

import (
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

const h100 = "NVIDIA-H100-80GB-HBM3"

// One cluster for the package with two disjoint sets of fake GPU nodes: one
// for the node pool test (which adds and labels nodes), one for capacity.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Nodes: []testenv.NodePool{
		{Name: "np", Count: 2, GPUs: 8, Product: h100, Labels: map[string]string{"testpool": "np"}},
		{Name: "cap", Count: 2, GPUs: 4, Product: "NVIDIA-A100-SXM4-80GB", Labels: map[string]string{"testpool": "cap"}},
	}})
}
