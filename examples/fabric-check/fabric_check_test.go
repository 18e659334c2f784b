// Package fabriccheck_test applies examples/fabric-check with the terraform
// CLI: the example installs the MPI Operator, whose pod testenv's pod runner
// runs as the real operator, and the NCCL check's launcher runs a recorded
// nccl-tests log as its command.
package fabriccheck_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

const h100 = "NVIDIA-H100-80GB-HBM3"

// The cluster: a pool of two 8 × H100 nodes the check spans, a CPU node for
// the controllers' pods. JobSet and Trainer are installed from their charts
// (the runtime the check gates is a Trainer object); the MPI Operator is not:
// the example installs it, and the pod runner (PodRunner: every adapter)
// runs the operator's pod as the real operator, as on `make cluster-up`.
// The launcher container of the check's MPIJob (the nccl-tests image) is run
// by its own command line: the test's command prints a published
// nccl-tests log, which the provider reads as the launcher's log, the same
// way as on a real cluster; the workers (sshd) are kwok's.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{
		PodRunner: true,
		Nodes: []testenv.NodePool{
			{Name: "h100", Count: 2, GPUs: 8, Product: h100, GPUMemory: "81559"},
			{Name: "system", Count: 1},
		},
		Controllers: []testenv.Controller{testenv.ControllerOf(podrunner.JobSet), testenv.ControllerOf(podrunner.Trainer)},
		Commands:    []testenv.Command{{Image: regexp.MustCompile(`^ghcr\.io/coreweave/nccl-tests:`), Container: "launcher"}},
	})
}

var (
	clusterTrainingRuntimes = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "clustertrainingruntimes"}
	mpiJobs                 = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}
)

// The fabric gates the runtime: a recorded all_reduce_perf run over 4 × HDR
// (busbw 95.74 GB/s at its largest size, the row the verdict reads; 96.69
// two rows earlier) is
//
//  1. bad against the example's default 8 × 400 Gb/s (400 GB/s, 24 %): the
//     apply fails with the numbers and the checklist, and the runtime that
//     depends on the check is not created; the MPI Operator is installed
//     and running;
//  2. good against 4 × 200 Gb/s (100 GB/s, 96.7 %): the apply records the
//     verdict and creates the runtime; `plan -detailed-exitcode` exits 0,
//     and the check left no MPIJob behind.
func TestAccFabricCheckGatesTheRuntime(t *testing.T) {
	env := acctest.Env(t)
	ctx := context.Background()
	mod, err := testenv.ModuleDir(ctx, "github.com/kubeflow/mpi-operator", "v0.8.2")
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
	w := acctest.NewWorkspace(t, env, ".")
	w.Env = append(w.Env,
		"TF_VAR_mpi_operator_manifest_path="+filepath.Join(mod, "deploy", "v2beta1", "mpi-operator.yaml"),
		"TF_VAR_nccl_command="+string(command))

	out, err := w.Run("apply", "-auto-approve")
	if err == nil {
		t.Fatalf("apply against 8 × 400 Gb/s succeeded, want the check to fail it:\n%s", out)
	}
	for _, want := range []string{"NCCL check default/h100-fabric failed", "bad", "fail_on = bad", "checklist"} {
		if !strings.Contains(out, want) {
			t.Errorf("the failed apply does not say %q:\n%s", want, out)
		}
	}
	if _, err := env.Dynamic.Resource(clusterTrainingRuntimes).Get(ctx, "torch-h100-checked", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after the failed check the runtime exists or cannot be read (%v): want it not created", err)
	}
	if dep, err := env.Client.AppsV1().Deployments("mpi-operator").Get(ctx, "mpi-operator", metav1.GetOptions{}); err != nil {
		t.Errorf("the example's MPI Operator: %v", err)
	} else if dep.Status.ReadyReplicas != 1 {
		t.Errorf("the example's MPI Operator has %d ready replicas, want 1", dep.Status.ReadyReplicas)
	}

	// The same recorded run is good on the fabric it came from.
	w.Env = append(w.Env, "TF_VAR_nics_per_node=4", "TF_VAR_nic_gbps=200")
	if out, err = w.Run("apply", "-auto-approve"); err != nil {
		t.Fatal(err)
	}
	if warned := warnings(out); len(warned) > 0 {
		t.Logf("the apply warned: %q", warned)
	}
	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan -detailed-exitcode after apply exited %d, want 0:\n%s", code, out)
	}
	fabric := w.Outputs()["fabric"].(map[string]any)
	if fabric["verdict"] != "good" || fabric["busbw_gbps"] != 95.74 || fabric["peak_gbps"] != float64(100) {
		t.Errorf("fabric output %v: want verdict good, busbw 95.74 (the largest size's) of a 100 GB/s peak", fabric)
	}
	if nodes := fmt.Sprint(fabric["nodes"]); nodes != "[h100-0 h100-1]" {
		t.Errorf("nodes tested %s, want both pool nodes", nodes)
	}
	if _, err := env.Dynamic.Resource(clusterTrainingRuntimes).Get(ctx, "torch-h100-checked", metav1.GetOptions{}); err != nil {
		t.Errorf("the runtime after a good check: %v", err)
	}
	if list, err := env.Dynamic.Resource(mpiJobs).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Errorf("MPIJobs left after the check: %v (err %v)", list, err)
	}
}

// warnings are the titles of the warnings terraform printed, but the one
// about the provider's development override every test run has.
func warnings(out string) []string {
	var titles []string
	for _, line := range strings.Split(out, "\n") {
		if t, ok := strings.CutPrefix(strings.TrimSpace(line), "Warning: "); ok && !strings.HasPrefix(t, "Provider development overrides") {
			titles = append(titles, t)
		}
	}
	return titles
}
