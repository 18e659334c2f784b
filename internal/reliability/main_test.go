package reliability_test

import (
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// One cluster for the package: Kueue's, KubeRay's and LWS's CRDs (no
// controllers: the API server is stopped and restarted here), the stand-in
// Volcano chart's CRDs, and two small GPU pools.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{
		CRDDirs: append(kueueCRDs(), "../../testdata/charts/volcano/crds"),
		Nodes: []testenv.NodePool{
			{Name: "h100", Count: 2, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3"},
			{Name: "a100", Count: 2, GPUs: 4, Product: "NVIDIA-A100-SXM4-80GB"},
		},
	})
}
