// Package multikueue_test applies the MultiKueue examples with
// examples/rbac's least-privilege roles on the manager cluster, as
// internal/resources/kueue/multikueue does: a manager and a worker, each
// running Kueue. The worker's kubeconfig stays the worker's admin one: it is
// what the manager's Kueue uses to run workloads there (its own RBAC is the
// worker's business, not this provider's); the provider's identity on the
// manager is the least-privilege one.
package multikueue_test

import (
	"path/filepath"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.MainClusters(m,
		testenv.Options{APIServerArgs: acctest.AuditArgs(), Controllers: []testenv.Controller{testenv.Kueue()}, Nodes: []testenv.NodePool{{Name: "manager", Count: 1}}},
		testenv.Options{Controllers: []testenv.Controller{testenv.Kueue()}, Nodes: []testenv.NodePool{{Name: "worker-gpu", Count: 1, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3"}}},
	)
}

// Each example: apply, `plan -detailed-exitcode` exits 0, destroy; the
// resource examples with only the roles of their types, examples/multikueue
// with the aggregated role.
func TestAccMultiKueueWithLeastPrivilege(t *testing.T) {
	manager := acctest.Env(t)
	all := testenv.Clusters()
	if len(all) != 2 || all[0] != manager {
		t.Fatalf("want the manager and the worker from testenv.MainClusters, have %d clusters", len(all))
	}
	worker := all[1]
	inline, err := worker.KubeconfigData() // the Secret Kueue reads holds credentials inline
	if err != nil {
		t.Fatal(err)
	}
	aggregated := acctest.LeastPrivilegeKubeconfig(t, manager)
	for _, ex := range []string{"resources/aiplatform_multikueue_cluster", "resources/aiplatform_multikueue_config"} {
		t.Run(ex, func(t *testing.T) {
			src := acctest.FragmentWorkspace(t, acctest.ExampleFragment(t, ex))
			acctest.ApplyPlanDestroy(t, manager, src, acctest.IdentityFor(t, manager, ex, src), "TF_VAR_worker_kubeconfig="+string(inline))
		})
	}
	t.Run("multikueue", func(t *testing.T) {
		acctest.ApplyPlanDestroy(t, manager, filepath.Join("..", "..", "multikueue"), aggregated, "TF_VAR_worker_kubeconfig="+worker.Kubeconfig)
	})
}
