// Package rbac_test checks examples/rbac, the least-privilege setup: every
// type the provider registers has rules (coverage_test.go), and the examples
// apply, plan empty and destroy with a ServiceAccount token bound to the
// aggregated role and nothing else.
package rbac_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// The cluster of examples/examples_test.go — the real Kueue manager (its
// chart, its pod run by the pod runner), four 8 x H100 nodes and six 4 x A100
// nodes — and kube-controller-manager's ClusterRole aggregation, which fills
// the provider's role.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{APIServerArgs: acctest.AuditArgs(), Controllers: []testenv.Controller{testenv.Kueue()}, Nodes: []testenv.NodePool{
		{Name: "h100", Count: 4, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", GPUMemory: "81559"},
		{Name: "a100", Count: 6, GPUs: 4, Product: "NVIDIA-A100-SXM4-80GB", GPUMemory: "81920"},
	}})
}

// onThisCluster are the examples this cluster takes as they are (what
// examples/examples_test.go applies itself): resource examples, data
// sources and scenarios.
var onThisCluster = []string{
	"resources/aiplatform_admission_check",
	"resources/aiplatform_cluster_queue",
	"resources/aiplatform_cohort",
	"resources/aiplatform_gpu_node_pool",
	"resources/aiplatform_local_queue",
	"resources/aiplatform_model_cache",
	"resources/aiplatform_model_deployment",
	"resources/aiplatform_provisioning_request_config",
	"resources/aiplatform_resource_flavor",
	"resources/aiplatform_storage_version_migration",
	"resources/aiplatform_topology",
	"resources/aiplatform_workload_priority_class",
	"data-sources/aiplatform_gpu_capacity",
	"data-sources/aiplatform_inference_sizing",
	"quickstart",
	"getting-started",
	"teams",
	"model-cache",
	"topology",
}

// Each example: apply, `plan -detailed-exitcode` exits 0, destroy — all
// with a least-privilege identity: a scenario with the aggregated role of
// examples/rbac/provider.yaml, a resource or data source example with only
// the roles of the types it declares (each type's role is enough on its
// own). A refused request fails the test with the rule its role lacks.
func TestAccExamplesWithLeastPrivilege(t *testing.T) {
	env := acctest.Env(t)
	aggregated := acctest.LeastPrivilegeKubeconfig(t, env)
	for _, ex := range onThisCluster {
		t.Run(ex, func(t *testing.T) {
			if !strings.Contains(ex, "/") {
				acctest.ApplyPlanDestroy(t, env, filepath.Join("..", ex), aggregated)
				return
			}
			src := acctest.FragmentWorkspace(t, acctest.ExampleFragment(t, ex))
			acctest.ApplyPlanDestroy(t, env, src, acctest.IdentityFor(t, env, ex, src))
		})
	}
}
