package training_test

import (
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

const h100 = "NVIDIA-H100-80GB-HBM3"

// One cluster for the package: a 2-node 8-GPU pool the checks run on (and
// that the end-to-end test grows), a second 2-node pool for the node-join
// plan test, and a 1-node 2-GPU pool too small for 8 GPUs per node. Nodes
// imply the default StorageClass whose claims bind and may expand (the
// checkpoint stores).
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Nodes: []testenv.NodePool{
		{Name: "nc", Count: 2, GPUs: 8, Product: h100, Labels: map[string]string{"testpool": "nc"}},
		{Name: "nj", Count: 2, GPUs: 8, Product: h100, Labels: map[string]string{"testpool": "nj"}},
		{Name: "small", Count: 1, GPUs: 2, Product: h100, Labels: map[string]string{"testpool": "small"}},
	}})
}
