// Package llmd_test applies the InferencePool examples with examples/rbac's
// least-privilege roles, on a cluster with the InferencePool CRD (from the
// module cache) and the real endpoint picker run by the pod runner, as
// examples/serving-llm-d's.
package llmd_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

func TestMain(m *testing.M) {
	crds, err := testenv.InferencePoolCRDDir(context.Background())
	if err != nil && os.Getenv("TF_ACC") != "" {
		panic(err)
	}
	testenv.Main(m, testenv.Options{APIServerArgs: acctest.AuditArgs(),
		Nodes: []testenv.NodePool{
			{Name: "h100", Count: 2, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", GPUMemory: "81559", CPU: "64", Memory: "512Gi"},
		},
		CRDDirs:     []string{crds},
		Controllers: []testenv.Controller{testenv.EndpointPicker()},
	})
}

var onThisCluster = []string{
	"resources/aiplatform_inference_pool",
	"serving-llm-d",
}

// Each example: apply, `plan -detailed-exitcode` exits 0, destroy, with a
// resource example's identity bound to the roles of its types only and a
// scenario's to the aggregated role. A refused request fails the test with
// the rule the role lacks.
func TestAccInferencePoolWithLeastPrivilege(t *testing.T) {
	env := acctest.Env(t)
	aggregated := acctest.LeastPrivilegeKubeconfig(t, env)
	for _, ex := range onThisCluster {
		t.Run(ex, func(t *testing.T) {
			if !strings.Contains(ex, "/") {
				acctest.ApplyPlanDestroy(t, env, filepath.Join("..", "..", ex), aggregated)
				return
			}
			src := acctest.FragmentWorkspace(t, acctest.ExampleFragment(t, ex))
			acctest.ApplyPlanDestroy(t, env, src, acctest.IdentityFor(t, env, ex, src))
		})
	}
}
