package kueue_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// One cluster for the package: the Kueue CRDs from the module cache, no Kueue
// manager (these tests judge the objects the provider writes and reads), two
// fake 8-GPU nodes for quota derived from allocatable, and two for the
// topology warning. Tests against the real Kueue manager are in ./manager.
func TestMain(m *testing.M) {
	opts := testenv.Options{Nodes: []testenv.NodePool{
		{Name: "cq", Count: 2, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", Labels: map[string]string{"testpool": "cq"}},
		// A topology-aware pool where one node lacks the block label.
		{Name: "tas-labelled", Count: 1, GPUs: 8, Product: "TEST-TAS-GPU", Labels: map[string]string{"testpool": "tas", "example.com/block": "b1"}},
		{Name: "tas-bare", Count: 1, GPUs: 8, Product: "TEST-TAS-GPU", Labels: map[string]string{"testpool": "tas"}},
	}}
	if os.Getenv("TF_ACC") != "" {
		dir, err := testenv.KueueCRDDir(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		opts.CRDDirs = []string{dir}
	}
	testenv.Main(m, opts)
}

func kueueObject(resource, namespace, name string) acctest.Object {
	return acctest.Object{GVR: schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: resource}, Namespace: namespace, Name: name}
}
