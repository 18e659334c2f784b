// Package rbac_test checks examples/rbac, the least-privilege setup: every
// type the provider registers has rules (coverage_test.go), and the examples
// apply, plan empty and destroy with a ServiceAccount token bound to the
// aggregated role and nothing else.
package rbac_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// The cluster of examples/examples_test.go — the real Kueue manager (its
// chart, its pod run by the pod runner), four 8 x H100 nodes and six 4 x A100
// nodes — and kube-controller-manager's ClusterRole aggregation, which fills
// the provider's role.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{Controllers: []testenv.Controller{testenv.Kueue()}, Nodes: []testenv.NodePool{
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
	"resources/aiplatform_topology",
	"resources/aiplatform_workload_priority_class",
	"data-sources/aiplatform_gpu_capacity",
	"data-sources/aiplatform_inference_sizing",
	"quickstart",
	"teams",
	"model-cache",
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
			start := time.Now()
			dir := workspaceOf(t, ex)
			kubeconfig := aggregated
			if strings.Contains(ex, "/") {
				types := acctest.TypesIn(t, dir)
				kubeconfig = acctest.TypeRolesKubeconfig(t, env, "terraform-"+strings.ReplaceAll(filepath.Base(ex), "_", "-"), types)
				t.Logf("identity bound to the roles of %v only", types)
			}
			w := acctest.NewWorkspace(t, env, dir)
			w.SetKubeconfig(kubeconfig) // the cleanup's destroy too
			run(t, w, "apply", "-auto-approve")
			if code, out := w.PlanExitCode(); code != 0 {
				failWith(t, fmt.Sprintf("plan -detailed-exitcode exited %d, want 0", code), out)
			}
			run(t, w, "destroy", "-auto-approve")
			t.Logf("TIMING: %s applied, planned empty and destroyed with the least-privilege role in %s", ex, time.Since(start).Round(100*time.Millisecond))
		})
	}
}

func run(t *testing.T, w *acctest.Workspace, args ...string) {
	t.Helper()
	if out, err := w.Run(args...); err != nil {
		failWith(t, strings.Join(args, " ")+" failed", out)
	}
}

func failWith(t *testing.T, what, out string) {
	t.Helper()
	if missing := acctest.MissingRules(out); len(missing) > 0 {
		t.Fatalf("%s: the least-privilege role lacks:\n  %s\n\n%s", what, strings.Join(missing, "\n  "), out)
	}
	t.Fatalf("%s:\n%s", what, out)
}

// workspaceOf is the directory to run: a scenario as it is; a resource or
// data source example (a fragment, as the docs show it) with the provider
// block the scenarios have.
func workspaceOf(t *testing.T, ex string) string {
	t.Helper()
	src := filepath.Join("..", ex)
	if !strings.Contains(ex, "/") {
		return src
	}
	dir := t.TempDir()
	for _, name := range []string{"resource.tf", "data-source.tf"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	provider := acctest.RequiredProviders + `
variable "kubeconfig" {
  type = string
}

provider "aiplatform" {
  config_path = var.kubeconfig
}
`
	if err := os.WriteFile(filepath.Join(dir, "provider.tf"), []byte(provider), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
