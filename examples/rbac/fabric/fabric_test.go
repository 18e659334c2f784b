// Package fabric_test applies examples/fabric-check with examples/rbac's
// aggregated least-privilege role, on examples/fabric-check's cluster: the
// example installs the MPI Operator (its pod run by the pod runner as the
// real operator), the NCCL check's launcher prints a recorded nccl-tests log
// (4 x HDR, busbw 95.74 GB/s at its largest size), and the check gates a Trainer runtime. Then
// the aiplatform_nccl_check example with only its types' roles, on an MPI
// Operator the platform team installed.
package fabric_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
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
	mod, err := testenv.ModuleDir(context.Background(), "github.com/kubeflow/mpi-operator", "v0.8.2")
	if err != nil {
		t.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	fixture := filepath.Join(root, "internal", "fabric", "testdata", "published", "ib_footer_nccl-tests119.log")
	command, _ := json.Marshal([]string{"cat", fixture})
	manifest := filepath.Join(mod, "deploy", "v2beta1", "mpi-operator.yaml")
	aggregated := acctest.LeastPrivilegeKubeconfig(t, env)
	t.Run("fabric-check", func(t *testing.T) {
		acctest.AwaitMPIOperatorPort(t)
		acctest.ApplyPlanDestroy(t, env, filepath.Join(root, "examples", "fabric-check"), aggregated,
			"TF_VAR_mpi_operator_manifest_path="+manifest,
			"TF_VAR_nccl_command="+string(command), "TF_VAR_nics_per_node=4", "TF_VAR_nic_gbps=200")
	})
	t.Run("resources/aiplatform_nccl_check", func(t *testing.T) {
		// The platform team's MPI Operator (the cluster admin's identity,
		// destroyed when the subtest ends).
		acctest.AwaitMPIOperatorPort(t)
		platform := acctest.NewWorkspace(t, env, acctest.FragmentWorkspace(t,
			fmt.Sprintf("resource \"aiplatform_mpi_operator\" \"platform\" {\n  version   = \"v0.8.2\"\n  manifests = { path = %q }\n}\n", manifest)))
		if _, err := platform.Run("apply", "-auto-approve"); err != nil {
			t.Fatal(err)
		}
		// The example on this cluster's fabric: the recorded log's 4 x HDR
		// (the example's 8 x 400 Gb/s would judge it bad, as it should), its
		// launcher command printing that log, and no RDMA device requests
		// (the nodes advertise none; the pods would never schedule).
		ex := "resources/aiplatform_nccl_check"
		tf := acctest.ExampleFragment(t, ex)
		for _, r := range [][2]string{
			{"  nics_per_node = 8 ", "  nics_per_node = 4 "},
			{"  nic_gbps      = 400 ", "  nic_gbps      = 200 "},
			{`  rdma_resources = { "rdma/ib" = 1 }` + "\n", ""},
			{`  fail_on = "bad"`, "  command = " + string(command) + "\n  fail_on = \"bad\""},
		} {
			if !strings.Contains(tf, r[0]) {
				t.Fatalf("examples/%s no longer has %q: update this test", ex, r[0])
			}
			tf = strings.Replace(tf, r[0], r[1], 1)
		}
		src := acctest.FragmentWorkspace(t, tf)
		acctest.ApplyPlanDestroy(t, env, src, acctest.IdentityFor(t, env, ex, src))
	})
}
