package training_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/training"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// checkConfig is an aiplatform_nccl_check "fabric" on the 2-node pool "nc"
// with a 4 × 200 Gb/s peak; set overrides attributes ("" removes one).
func checkConfig(env *testenv.Env, set map[string]string) string {
	attrs := map[string]string{
		"name":          `"fabric"`,
		"node_selector": `{ testpool = "nc" }`,
		"gpus_per_node": "8",
		"nics_per_node": "4",
		"nic_gbps":      "200",
	}
	for k, v := range set {
		if v == "" {
			delete(attrs, k)
		} else {
			attrs[k] = v
		}
	}
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(acctest.Provider(env))
	b.WriteString("\nresource \"aiplatform_nccl_check\" \"fabric\" {\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s = %s\n", k, attrs[k])
	}
	b.WriteString("}\n")
	return b.String()
}

// noCheckPods fails when any pod of a check exists.
func noCheckPods(t *testing.T, env *testenv.Env) {
	t.Helper()
	pods, err := env.Client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{LabelSelector: "aiplatform.terraform.io/nccl-check"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) > 0 {
		t.Errorf("%d pods of a check are left, e.g. %s/%s", len(pods.Items), pods.Items[0].Namespace, pods.Items[0].Name)
	}
}

func mpiJobsServed(t *testing.T, env *testenv.Env) bool {
	t.Helper()
	served, err := kube.NewClientFromREST(env.RESTConfig, false).Served(context.Background(), training.MPIJobKind)
	if err != nil {
		t.Fatal(err)
	}
	return served
}

// Bad input is refused at plan with the attribute's path, before anything
// is created.
func TestAccNCCLCheckBadInput(t *testing.T) {
	env := acctest.Env(t)
	cases := []struct {
		name string
		set  map[string]string
		want []string
	}{
		{"ratios out of order", map[string]string{"good_ratio": "0.85", "acceptable_ratio": "0.9"},
			[]string{"Ratios out of order", "acceptable_ratio: acceptable_ratio (0.9) must not exceed good_ratio (0.85)"}},
		{"name not starting with a letter", map[string]string{"name": `"8-fabric"`}, []string{"name", "must start with a letter"}},
		{"ratio above 1", map[string]string{"good_ratio": "1.5"}, []string{"Ratio out of range", "good_ratio: must be in (0, 1], not 1.5"}},
		{"gpus_per_node 0", map[string]string{"gpus_per_node": "0"}, []string{"gpus_per_node", "must be at least 1, got: 0"}},
		{"unknown collective", map[string]string{"binary": `"allreduce_perf"`}, []string{"binary", "value must be one of", "all_reduce_perf"}},
		{"min_bytes above max_bytes", map[string]string{"min_bytes": `"1G"`, "max_bytes": `"8M"`},
			[]string{"Size range out of order", "min_bytes: min_bytes 1G is larger than max_bytes 8M"}},
		{"bad size", map[string]string{"max_bytes": `"8GB"`}, []string{"Invalid size", "max_bytes: size \"8GB\" must be a whole number of bytes"}},
		{"no peak", map[string]string{"nics_per_node": "", "nic_gbps": ""}, []string{"Missing peak", "nics_per_node: the verdict needs the fabric's peak"}},
		{"both peaks", map[string]string{"peak_busbw_gbps": "100"}, []string{"Conflicting peak", "peak_busbw_gbps: give either peak_busbw_gbps or nics_per_node"}},
		{"nics without speed", map[string]string{"nic_gbps": ""}, []string{"Missing NIC speed", "nic_gbps: nics_per_node needs nic_gbps"}},
		{"unknown fail_on", map[string]string{"fail_on": `"warn"`}, []string{"fail_on", "value must be one of", "bad", "acceptable", "never"}},
		{"bad env name", map[string]string{"env": `{ "NCCL-DEBUG" = "INFO" }`}, []string{"Invalid environment variable name", `env["NCCL-DEBUG"]`}},
		{"bad timeout", map[string]string{"timeout": `"10s"`}, []string{"Invalid timeout", "timeout: \"10s\": a check's timeout is between 1m and 24h"}},
		{"more nodes than the pool", map[string]string{"nodes": "3"},
			[]string{"More nodes than the pool has", "nodes: the check asks for 3 nodes, but only 2 Ready, schedulable nodes matching {testpool=nc} can hold 8 GPUs (nc-0, nc-1)"}},
		{"nodes too small", map[string]string{"node_selector": `{ testpool = "small" }`},
			[]string{"No node can run the check", "gpus_per_node: each worker asks for 8 GPUs, but the 1 Ready nodes matching {testpool=small} have fewer allocatable: small-0 (2)"}},
		{"empty pool", map[string]string{"node_selector": `{ testpool = "none" }`},
			[]string{"No node can run the check", "node_selector: no Ready, schedulable node matches {testpool=none}"}},
	}
	steps := make([]resource.TestStep, 0, len(cases))
	for _, tc := range cases {
		steps = append(steps, resource.TestStep{
			Config:      checkConfig(env, tc.set),
			PlanOnly:    true,
			ExpectError: acctest.ErrorMatching(tc.want...),
		})
	}
	resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: acctest.Factories, Steps: steps})
	noCheckPods(t, env)
}

// A valid check plans with its peak, nodes and command known; applying it
// on a cluster without the MPI Operator fails with what to install, and
// leaves nothing.
func TestAccNCCLCheckWithoutMPIOperator(t *testing.T) {
	env := acctest.Env(t)
	if mpiJobsServed(t, env) {
		t.Skip("this cluster serves kubeflow.org/v2beta1 MPIJobs: TestAccNCCLCheckEndToEnd covers it")
	}
	addr := "aiplatform_nccl_check.fabric"
	config := checkConfig(env, map[string]string{"env": `{ NCCL_DEBUG = "INFO" }`})
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("peak_busbw_gbps"), knownvalue.Float64Exact(100)),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("nodes"), knownvalue.Int64Exact(2)),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("nodes_tested"), stringsExact("nc-0", "nc-1")),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("command"), stringsExact(strings.Fields(
						"mpirun --allow-run-as-root -np 16 --map-by ppr:8:node --bind-to none -x NCCL_DEBUG=INFO "+
							"/opt/nccl_tests/build/all_reduce_perf -b 8 -e 8G -f 2 -g 1 -n 20 -w 5 -c 1")...)),
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("verdict")),
				}},
				ExpectError: acctest.ErrorMatching("NCCL check default/fabric failed", "the MPI Operator is not installed in this cluster", "does not serve kubeflow.org/v2beta1/mpijobs"),
			},
			{
				// gpus_per_node unknown until apply (as from a node pool created
				// in the same apply): nodes, nodes_tested and the command are
				// unknown in the plan, computed when Terraform plans again at
				// apply, and the run gets as far as the MPIJob.
				Config: strings.Replace(config, "gpus_per_node = 8", "gpus_per_node = terraform_data.gpus.output", 1) +
					"resource \"terraform_data\" \"gpus\" {\n  input = 8\n}\n",
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("nodes_tested")),
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("command")),
				}},
				ExpectError: acctest.ErrorMatching("NCCL check default/fabric failed", "the MPI Operator is not installed in this cluster"),
			},
		},
	})
	noCheckPods(t, env)
}

func stringsExact(s ...string) knownvalue.Check {
	checks := make([]knownvalue.Check, len(s))
	for i, v := range s {
		checks[i] = knownvalue.StringExact(v)
	}
	return knownvalue.ListExact(checks)
}

// End to end through the real MPI Operator: a check on the 2-node pool
// records its verdict and leaves no pod; a node joining the pool re-runs it;
// import is refused with the reason; a bad result fails the apply with the
// numbers and the checklist, and leaves no pod.
//
// The launcher's command prints a published nccl-tests log (4 × 200 Gb/s
// HDR, 95.74 GB/s in its last row), so whatever runs the launcher's container in the test
// cluster produces a real log, which the provider reads as on any cluster:
// GET /api/v1/namespaces/default/pods/<launcher pod>/log?container=launcher.
func TestAccNCCLCheckEndToEnd(t *testing.T) {
	env := acctest.Env(t)
	if !mpiJobsServed(t, env) {
		t.Skip("the test cluster does not serve kubeflow.org/v2beta1 MPIJobs (no MPI Operator): " +
			"the end-to-end check needs testenv to install the MPI Operator and run the launcher's command")
	}
	fixture, err := filepath.Abs("../../fabric/testdata/published/ib_footer_nccl-tests119.log")
	if err != nil {
		t.Fatal(err)
	}
	addr := "aiplatform_nccl_check.fabric"
	config := func(nicGbps string) string {
		return checkConfig(env, map[string]string{
			"nic_gbps": nicGbps,
			"command":  fmt.Sprintf(`["cat", %q]`, fixture),
			"timeout":  `"5m"`,
		})
	}
	jobGone := acctest.Object{GVR: training.MPIJobKind.GVR(), Namespace: "default", Name: "fabric"}.Gone(env)
	noPods := func(*terraform.State) error {
		pods, err := env.Client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{LabelSelector: "aiplatform.terraform.io/nccl-check"})
		if err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d pods of the check are left, e.g. %s", len(pods.Items), pods.Items[0].Name)
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: config("200"),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "verdict", "good"),
					// The last row (the largest size), not the table's highest (96.69).
					resource.TestCheckResourceAttr(addr, "busbw_gbps", "95.74"),
					resource.TestCheckResourceAttr(addr, "busbw_at_bytes", "133169160"),
					resource.TestCheckResourceAttr(addr, "results.5.busbw_gbps", "95.74"),
					resource.TestCheckResourceAttr(addr, "ratio", "0.9574"),
					resource.TestCheckResourceAttr(addr, "out_of_bounds", "0"),
					resource.TestCheckResourceAttr(addr, "results.#", "6"),
					resource.TestCheckResourceAttr(addr, "nodes_tested.#", "2"),
					resource.TestCheckResourceAttrSet(addr, "ran_at"),
					jobGone, noPods,
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				PreConfig: func() {
					if _, err := env.AddNodes(context.Background(), testenv.NodePool{Name: "nc", Count: 1, GPUs: 8, Product: h100,
						Labels: map[string]string{"testpool": "nc"}}); err != nil {
						t.Fatal(err)
					}
				},
				Config: config("200"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("nodes_tested"), stringsExact("nc-0", "nc-1", "nc-2")),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "nodes_tested.#", "3"),
					resource.TestCheckResourceAttr(addr, "verdict", "good"),
					jobGone, noPods,
				),
			},
			{
				ResourceName: addr, ImportState: true, ImportStateId: "default/fabric",
				ExpectError: acctest.ErrorMatching("aiplatform_nccl_check cannot be imported", "lives only in the Terraform state"),
			},
			{
				// 95.74 GB/s of 4 × 800 Gb/s (400 GB/s) is 24 %: bad.
				Config: config("800"),
				ExpectError: acctest.ErrorMatching("NCCL check default/fabric failed", "verdict: bad", "23.9% of the 400.00 GB/s peak", "fail_on = bad",
					"checklist, in this order", "NCCL_DEBUG=INFO"),
			},
			{
				Config:   config("800"),
				PlanOnly: true, ExpectNonEmptyPlan: true, // the failed run recorded nothing: the next apply runs it again
			},
		},
	})
	noCheckPods(t, env)
}

// The documented example (examples/resources/aiplatform_nccl_check) plans on
// the test cluster without a diagnostic.
func TestAccNCCLCheckExample(t *testing.T) {
	env := acctest.Env(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join(root, "examples", "resources", "aiplatform_nccl_check", "resource.tf"))
	if err != nil {
		t.Fatal(err)
	}
	// PlanOnly: no plan checks can run with it, but a bad example would fail
	// the plan; the planned values are asserted in TestAccNCCLCheckWithoutMPIOperator.
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{{
			Config:   acctest.Provider(env) + string(example),
			PlanOnly: true, ExpectNonEmptyPlan: true,
		}},
	})
}

// The rule on the real cluster, through the terraform CLI (plugin-testing
// cannot see warnings): the launcher prints an invented log of
// internal/fabric/testdata/made (4 × 200 Gb/s, a 100 GB/s peak). An
// acceptable run (85.31 GB/s at 8 GiB) applies with a warning carrying the
// verdict, the numbers and the whole ordered checklist, and records the
// last row's numbers; a fabric that collapses at the largest size (97.02
// GB/s at 2 GiB, 61.04 at 8 GiB) fails as bad — the highest busbw would
// have said good. Neither leaves a pod or the MPIJob.
func TestAccNCCLCheckLargestRow(t *testing.T) {
	env := acctest.Env(t)
	if !mpiJobsServed(t, env) {
		t.Skip("the test cluster does not serve kubeflow.org/v2beta1 MPIJobs (no MPI Operator)")
	}
	made, err := filepath.Abs("../../fabric/testdata/made")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	main := acctest.RequiredProviders + `
variable "kubeconfig" { type = string }
variable "log" {
  type    = string
  default = "" # destroy needs no log
}
provider "aiplatform" {
  config_path = var.kubeconfig
}
resource "aiplatform_nccl_check" "fabric" {
  name          = "largest"
  node_selector = { testpool = "nc" }
  gpus_per_node = 8
  nics_per_node = 4
  nic_gbps      = 200
  command       = ["cat", var.log]
  timeout       = "5m"
}
output "check" {
  value = {
    verdict  = aiplatform_nccl_check.fabric.verdict
    busbw    = aiplatform_nccl_check.fabric.busbw_gbps
    at       = aiplatform_nccl_check.fabric.busbw_at_bytes
    ratio    = aiplatform_nccl_check.fabric.ratio
    avg      = aiplatform_nccl_check.fabric.avg_busbw_gbps
    last_row = aiplatform_nccl_check.fabric.results[length(aiplatform_nccl_check.fabric.results) - 1]
  }
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	w := acctest.NewWorkspace(t, env, dir)
	// flat drops the diagnostics' box and the CLI's line wrapping.
	flat := func(s string) string { return strings.Join(strings.Fields(strings.ReplaceAll(s, "│", " ")), " ") }
	contains := func(out string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(flat(out), flat(w)) {
				t.Errorf("output lacks %q:\n%s", w, out)
			}
		}
	}
	leftovers := func() {
		t.Helper()
		noCheckPods(t, env)
		if err := (acctest.Object{GVR: training.MPIJobKind.GVR(), Namespace: "default", Name: "largest"}.Gone(env))(nil); err != nil {
			t.Error(err)
		}
	}

	out, err := w.Run("apply", "-auto-approve", "-var", "log="+filepath.Join(made, "acceptable_4x200_ib.log"))
	if err != nil {
		t.Fatal(err)
	}
	contains(out,
		"Warning: NCCL check default/largest: acceptable (85.3% of the peak at the largest size)",
		"The check is recorded (fail_on = bad), but the fabric is not good",
		"verdict: acceptable — busbw 85.31 GB/s at the largest size (8 GiB, the table's last row) is 85.3% of the 100.00 GB/s peak (4 NICs × 200 Gb/s ÷ 8)",
		"1. NCCL_SOCKET_IFNAME (the right interface)", "2. NCCL_IB_HCA (the RDMA devices)", "3. MTU and GID index",
		"4. The pods resolve and reach each other", "kubectl exec -n default largest-worker-0 -- getent hosts largest-worker-1.largest.default.svc",
		"5. hostNetwork: true for RoCE")
	if strings.Index(flat(out), "1. NCCL_SOCKET_IFNAME") > strings.Index(flat(out), "5. hostNetwork") {
		t.Errorf("checklist out of order:\n%s", out)
	}
	check, _ := w.Outputs()["check"].(map[string]any)
	last, _ := check["last_row"].(map[string]any)
	if check["verdict"] != "acceptable" || check["busbw"] != 85.31 || check["at"] != float64(8<<30) || check["ratio"] != 0.8531 ||
		check["avg"] != 72.0757 || last["busbw_gbps"] != check["busbw"] || last["size_bytes"] != check["at"] {
		t.Errorf("recorded %v", check)
	}
	leftovers()

	out, err = w.Run("apply", "-auto-approve", "-var", "log="+filepath.Join(made, "collapse_4x200_roce.log"))
	if err == nil {
		t.Fatalf("a fabric at 61%% of its peak at the largest size applied:\n%s", out)
	}
	contains(out,
		"Error: NCCL check default/largest failed",
		"verdict: bad — busbw 61.04 GB/s at the largest size (8 GiB, the table's last row) is 61.0% of the 100.00 GB/s peak",
		"busbw collapses at the largest sizes: 97.02 GB/s (97.0%, good) at 2 GiB, 61.04 GB/s (61.0%) at 8 GiB, the last row",
		"transport: RoCE", "* 3. MTU and GID index", "* 5. hostNetwork: true for RoCE")
	if strings.Contains(out, "verdict: good") {
		t.Errorf("the collapse reads as good:\n%s", out)
	}
	leftovers()
}
