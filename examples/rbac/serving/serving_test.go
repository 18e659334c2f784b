// Package serving_test applies the serving examples that need the KubeRay
// operator and the LWS controller with examples/rbac's least-privilege
// roles, on a cluster running both (their charts, their pods run by the pod
// runner) and Kueue judging RayClusters, as internal/resources/serving's.
package serving_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// Two 8 x H100 nodes with an H100 machine's CPUs and memory, so that the
// LeaderWorkerSet examples' pods schedule and the apply's readiness wait
// ends (the example's 2 pods x 8 GPUs, serving-70b's 4 replicas x 2) and four 4 x L40S nodes (the Ray examples).
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{APIServerArgs: acctest.AuditArgs(),
		Controllers: []testenv.Controller{testenv.KubeRay(), testenv.LWS(), testenv.Kueue("batch/job", "ray.io/raycluster")},
		Nodes: []testenv.NodePool{
			{Name: "h100", Count: 2, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", GPUMemory: "81559", CPU: "192", Memory: "2048Gi"},
			{Name: "l40s", Count: 4, GPUs: 4, Product: "NVIDIA-L40S"},
		},
	})
}

var onThisCluster = []string{
	"resources/aiplatform_ray_cluster",
	"resources/aiplatform_ray_service",
	"resources/aiplatform_lws_group",
	"ray",
	"serving-70b",
}

// Each example: apply, `plan -detailed-exitcode` exits 0, destroy, with a
// resource example's identity bound to the roles of its types only and a
// scenario's to the aggregated role. A refused request fails the test with
// the rule the role lacks.
func TestAccServingWithLeastPrivilege(t *testing.T) {
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
