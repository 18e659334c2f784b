package training_test

import (
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// One cluster for the package: a CPU node, and (implied by Nodes) the
// default StorageClass whose claims bind and may expand.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Nodes: []testenv.NodePool{{Name: "cpu", Count: 1}}})
}
