package modelcache_test

import (
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// One cluster for the package: two fake 8-GPU nodes (the pool node_local
// caches warm) and a CPU node; warm-up Jobs run anywhere. Claims bind through
// testenv's default StorageClass; kwok completes warm-up pods, or fails the
// ones annotated with testenv.PodFailAnnotation.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Nodes: []testenv.NodePool{
		{Name: "mc", Count: 2, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", Labels: map[string]string{"testpool": "mc"}},
		{Name: "cpu", Count: 1},
	}})
}
