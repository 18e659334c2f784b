// Package fabric_test applies examples/fabric-check with examples/rbac's
// aggregated least-privilege role, on examples/fabric-check's cluster: the
// example installs the MPI Operator (its pod run by the pod runner as the
// real operator), the NCCL check's launcher prints a recorded nccl-tests log
// (4 x HDR, busbw 96.69 GB/s), and the check gates a Trainer runtime.
package fabric_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{
		APIServerArgs: acctest.AuditArgs(),
		PodRunner:     true,
		Nodes: []testenv.NodePool{
			{Name: "h100", Count: 2, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", GPUMemory: "81559"},
			{Name: "system", Count: 1},
		},
		Controllers: []testenv.Controller{testenv.ControllerOf(podrunner.JobSet), testenv.ControllerOf(podrunner.Trainer)},
		Commands:    []testenv.Command{{Image: regexp.MustCompile(`^ghcr\.io/coreweave/nccl-tests:`), Container: "launcher"}},
	})
}

// apply (the MPI Operator installed, the check good on the fabric the log
// came from, the runtime created), `plan -detailed-exitcode` exits 0,
// destroy — with the aggregated role only.
func TestAccFabricCheckWithLeastPrivilege(t *testing.T) {
	env := acctest.Env(t)
	mod, err := testenv.ModuleDir(context.Background(), "github.com/kubeflow/mpi-operator", "v0.8.0")
	if err != nil {
		t.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	fixture := filepath.Join(root, "internal", "fabric", "testdata", "published", "ib_footer_nccl-tests119.log")
	command, _ := json.Marshal([]string{"cat", fixture})
	acctest.AwaitMPIOperatorPort(t)
	acctest.ApplyPlanDestroy(t, env, filepath.Join(root, "examples", "fabric-check"), acctest.LeastPrivilegeKubeconfig(t, env),
		"TF_VAR_mpi_operator_manifest_path="+filepath.Join(mod, "deploy", "v2beta1", "mpi-operator.yaml"),
		"TF_VAR_nccl_command="+string(command), "TF_VAR_nics_per_node=4", "TF_VAR_nic_gbps=200")
}
