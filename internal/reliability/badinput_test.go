package reliability_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// badInputs are invalid configurations: each must fail at `terraform plan`
// with a diagnostic that names the attribute (its path is in the text, since
// Terraform points at the whole block for nested values) and the problem.
var badInputs = []struct {
	name   string
	config string
	err    []string
}{
	// Names and namespaces.
	{"flavor name upper case", `resource "aiplatform_resource_flavor" "x" { name = "H100" }`, []string{`name: "H100" is not a valid DNS-1123 subdomain`}},
	{"flavor name underscore", `resource "aiplatform_resource_flavor" "x" { name = "h_100" }`, []string{`name: "h_100" is not a valid DNS-1123 subdomain`}},
	{"priority name with space", `resource "aiplatform_workload_priority_class" "x" {
  name  = "high prio"
  value = 1
}`, []string{`name: "high prio" is not a valid DNS-1123 subdomain`}},
	{"queue name too long", `resource "aiplatform_local_queue" "x" {
  name          = "` + longName(254) + `"
  namespace     = "default"
  cluster_queue = "cq"
}`, []string{`is not a valid DNS-1123 subdomain`, `must be no more than 253 characters`}},
	{"namespace with dot", `resource "aiplatform_local_queue" "x" {
  name          = "q"
  namespace     = "team.a"
  cluster_queue = "cq"
}`, []string{`namespace: "team.a" is not a valid DNS-1123 label`}},
	{"local queue bad cluster_queue", `resource "aiplatform_local_queue" "x" {
  name          = "q"
  namespace     = "default"
  cluster_queue = "CQ!"
}`, []string{`cluster_queue: "CQ!" is not a valid DNS-1123 subdomain`}},
	{"cohort name", `resource "aiplatform_cohort" "x" { name = "-ai" }`, []string{`name: "-ai" is not a valid DNS-1123 subdomain`}},
	{"cohort parent", `resource "aiplatform_cohort" "x" {
  name   = "ai"
  parent = "Root"
}`, []string{`parent: "Root" is not a valid DNS-1123 subdomain`}},
	{"cohort own parent", `resource "aiplatform_cohort" "x" {
  name   = "ai"
  parent = "ai"
}`, []string{"Cohort is its own parent"}},
	{"cluster queue cohort name", cq(`cohort = "AI"`, gpu(`nominal_quota = "1"`)), []string{`cohort: "AI" is not a valid DNS-1123 subdomain`}},
	{"pool name is a label", `resource "aiplatform_gpu_node_pool" "x" {
  name     = "pool.h100"
  selector = { a = "b" }
}`, []string{`name: "pool.h100" is not a valid DNS-1123 label`}},

	// Quantities.
	{"quota 1x", cq("", gpu(`nominal_quota = "1x"`)), []string{`resource_groups[0].flavors[0].resources[0].nominal_quota: "1x" is not a non-negative Kubernetes quantity`}},
	{"quota negative", cq("", gpu(`nominal_quota = "-1"`)), []string{`nominal_quota: "-1"`, "must not be negative"}},
	{"quota bare suffix", cq("", gpu(`nominal_quota = "Gi"`)), []string{`nominal_quota: "Gi" is not a non-negative Kubernetes quantity`}},
	{"quota empty", cq("", gpu(`nominal_quota = ""`)), []string{`nominal_quota: "" is not a non-negative Kubernetes quantity`}},
	{"quota spaces", cq("", gpu(`nominal_quota = " 8"`)), []string{`nominal_quota: " 8" is not a non-negative Kubernetes quantity`}},
	{"quota huge exponent", cq("", gpu(`nominal_quota = "8e22222222222"`)), []string{`exponent 22222222222 is out of range`}},
	{"quota past int64", cq("", gpu(`nominal_quota = "10000000000000000000000"`)), []string{`at most 9223372036854775`}},
	{"borrowing limit bad", cq(`cohort = "ai"`, gpu(`nominal_quota = "1", borrowing_limit = "lots"`)), []string{`borrowing_limit: "lots" is not a non-negative Kubernetes quantity`}},
	{"lending limit bad", cq(`cohort = "ai"`, gpu(`nominal_quota = "1", lending_limit = "1.2.3"`)), []string{`lending_limit: "1.2.3" is not a non-negative Kubernetes quantity`}},
	{"reserve bad", cq("", gpu(`from_allocatable = { node_selector = { a = "b" }, reserve = "x" }`)), []string{`reserve: "x" is not a non-negative Kubernetes quantity`}},
	{"fair sharing weight", cq(`fair_sharing = { weight = "heavy" }`, gpu(`nominal_quota = "1"`)), []string{`fair_sharing.weight: "heavy" is not a non-negative Kubernetes quantity`}},

	// Shares and derived quota.
	{"share negative", cq("", gpu(`from_allocatable = { node_selector = { a = "b" }, share = -0.5 }`)), []string{"share", "must be between 0.000000 and 1.000000"}},
	{"share above one", cq("", gpu(`from_allocatable = { node_selector = { a = "b" }, share = 1.5 }`)), []string{"share", "must be between 0.000000 and 1.000000"}},
	{"share zero", cq("", gpu(`from_allocatable = { node_selector = { a = "b" }, share = 0 }`)), []string{"share", "must be none of"}},
	{"empty node selector", cq("", gpu(`from_allocatable = { node_selector = {} }`)), []string{"node_selector", "must contain at least 1 elements"}},
	{"reserve above allocatable", cq("", gpu(`from_allocatable = { node_selector = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }, reserve = "17" }`)),
		[]string{"Reserve larger than allocatable", "reserve 17 is more than the 16 of nvidia.com/gpu allocatable on the 2 Ready nodes"}},
	{"quota both ways", cq("", gpu(`nominal_quota = "1", from_allocatable = { node_selector = { a = "b" } }`)), []string{"Both nominal_quota and from_allocatable"}},
	{"no quota at all", cq("", gpu(``)), []string{"No quota", "set nominal_quota, or from_allocatable"}},

	// Enumerations.
	{"queueing strategy", cq(`queueing_strategy = "LIFO"`, gpu(`nominal_quota = "1"`)), []string{"queueing_strategy", `got: "LIFO"`}},
	{"stop policy", cq(`stop_policy = "Pause"`, gpu(`nominal_quota = "1"`)), []string{"stop_policy", `got: "Pause"`}},
	{"preemption within", cq(`preemption = { within_cluster_queue = "Always" }`, gpu(`nominal_quota = "1"`)), []string{"preemption.within_cluster_queue", `got: "Always"`}},
	{"preemption reclaim", cq(`preemption = { reclaim_within_cohort = "Sometimes" }`, gpu(`nominal_quota = "1"`)), []string{"preemption.reclaim_within_cohort", `got: "Sometimes"`}},
	{"borrow within cohort needs reclaim", cq(`preemption = { borrow_within_cohort = { policy = "LowerPriority" } }`, gpu(`nominal_quota = "1"`)),
		[]string{"preemption.borrow_within_cohort.policy: Kueue only preempts while borrowing when reclaim_within_cohort is LowerPriority or Any"}},
	{"fungibility value", cq(`flavor_fungibility = { when_can_borrow = "Borrow" }`, gpu(`nominal_quota = "1"`)), []string{"flavor_fungibility.when_can_borrow", `got: "Borrow"`}},
	{"fungibility preference", cq(`flavor_fungibility = { preference = "BorrowingOverPreemption" }`, gpu(`nominal_quota = "1"`)),
		[]string{"flavor_fungibility.preference: Kueue accepts a preference only when when_can_borrow and when_can_preempt are both TryNextFlavor"}},
	{"selector operator", cq(`namespace_selector = { match_expressions = [{ key = "team", operator = "Equals" }] }`, gpu(`nominal_quota = "1"`)), []string{"namespace_selector.match_expressions[0].operator", `got: "Equals"`}},
	{"selector In without values", cq(`namespace_selector = { match_expressions = [{ key = "team", operator = "In" }] }`, gpu(`nominal_quota = "1"`)), []string{`namespace_selector.match_expressions[0].values: operator "In" needs at least one value`}},
	{"selector Exists with values", cq(`namespace_selector = { match_expressions = [{ key = "team", operator = "Exists", values = ["a"] }] }`, gpu(`nominal_quota = "1"`)), []string{`operator "Exists" takes no values`}},
	{"selector label value", cq(`namespace_selector = { match_labels = { team = "a b" } }`, gpu(`nominal_quota = "1"`)), []string{"Invalid label value", `namespace_selector.match_labels["team"]: "a b"`}},
	{"local queue stop policy", `resource "aiplatform_local_queue" "x" {
  name          = "q"
  namespace     = "default"
  cluster_queue = "cq"
  stop_policy   = "Freeze"
}`, []string{"stop_policy", `got: "Freeze"`}},
	{"taint effect", `resource "aiplatform_resource_flavor" "x" {
  name        = "f"
  node_taints = [{ key = "k", effect = "NoRun" }]
}`, []string{"node_taints[0].effect", `got: "NoRun"`}},
	{"toleration operator", `resource "aiplatform_resource_flavor" "x" {
  name        = "f"
  tolerations = [{ key = "k", operator = "Contains" }]
}`, []string{"tolerations[0].operator", `got: "Contains"`}},
	{"pool taint effect", `resource "aiplatform_gpu_node_pool" "x" {
  name     = "p"
  selector = { a = "b" }
  taints   = [{ key = "k", effect = "Evict" }]
}`, []string{"taints[0].effect", `got: "Evict"`}},

	// Kueue's own rules, at plan time.
	{"resource outside covered_resources", cq("", `{ name = "cpu", nominal_quota = "1" }`), []string{`resource_groups[0].flavors[0].resources[0].name: resource 0 is "cpu" but covered_resources[0] is "nvidia.com/gpu"`}},
	{"missing resource in flavor", `resource "aiplatform_cluster_queue" "x" {
  name = "x"
  resource_groups = [{ covered_resources = ["cpu", "nvidia.com/gpu"], flavors = [{ name = "f", resources = [{ name = "cpu", nominal_quota = "1" }] }] }]
}`, []string{"resource_groups[0].flavors[0].resources: this flavor gives quota for 1 resources but the group covers 2"}},
	{"duplicate flavor", `resource "aiplatform_cluster_queue" "x" {
  name = "x"
  resource_groups = [{ covered_resources = ["cpu"], flavors = [
    { name = "f", resources = [{ name = "cpu", nominal_quota = "1" }] },
    { name = "f", resources = [{ name = "cpu", nominal_quota = "2" }] },
  ] }]
}`, []string{`resource_groups[0].flavors[1].name: flavor "f" appears more than once`}},
	{"duplicate covered resource", `resource "aiplatform_cluster_queue" "x" {
  name = "x"
  resource_groups = [{ covered_resources = ["cpu", "cpu"], flavors = [{ name = "f", resources = [{ name = "cpu", nominal_quota = "1" }, { name = "cpu", nominal_quota = "1" }] }] }]
}`, []string{`resource_groups[0].covered_resources[1]: "cpu" is listed twice`}},
	{"resource in two groups", `resource "aiplatform_cluster_queue" "x" {
  name = "x"
  resource_groups = [
    { covered_resources = ["cpu"], flavors = [{ name = "f", resources = [{ name = "cpu", nominal_quota = "1" }] }] },
    { covered_resources = ["cpu"], flavors = [{ name = "g", resources = [{ name = "cpu", nominal_quota = "1" }] }] },
  ]
}`, []string{`resource_groups[1].covered_resources[0]: "cpu" is already covered by resource_groups[0]`}},
	{"borrowing without cohort", cq("", gpu(`nominal_quota = "4", borrowing_limit = "2"`)), []string{"resource_groups[0].flavors[0].resources[0].borrowing_limit: a queue can only borrow from a cohort"}},
	{"lending above nominal", cq(`cohort = "ai"`, gpu(`nominal_quota = "4", lending_limit = "5"`)), []string{"lending_limit 5 is more than nominal_quota 4"}},
	{"no resource groups", `resource "aiplatform_cluster_queue" "x" {
  name            = "x"
  resource_groups = []
}`, []string{"resource_groups list must contain at least 1 elements"}},
	{"empty covered resources", `resource "aiplatform_cluster_queue" "x" {
  name = "x"
  resource_groups = [{ covered_resources = [], flavors = [{ name = "f", resources = [] }] }]
}`, []string{"covered_resources list must contain at least 1 elements"}},
	{"bad resource name", cq("", `{ name = "nvidia com/gpu", nominal_quota = "1" }`), []string{`resources[0].name: "nvidia com/gpu" is not a valid qualified name`}},
	{"topology without node labels", `resource "aiplatform_resource_flavor" "x" {
  name          = "f"
  topology_name = "default"
}`, []string{"node_labels required with topology_name"}},
	{"toleration without key", `resource "aiplatform_resource_flavor" "x" {
  name        = "f"
  tolerations = [{ operator = "Equal", value = "v" }]
}`, []string{`tolerations[0].operator: A toleration without key matches every taint and needs operator = "Exists"`}},
	{"toleration Exists with value", `resource "aiplatform_resource_flavor" "x" {
  name        = "f"
  tolerations = [{ key = "k", operator = "Exists", value = "v" }]
}`, []string{`tolerations[0].value: A toleration with operator = "Exists" must not set value`}},
	{"toleration seconds without NoExecute", `resource "aiplatform_resource_flavor" "x" {
  name        = "f"
  tolerations = [{ key = "k", operator = "Exists", effect = "NoSchedule", toleration_seconds = 5 }]
}`, []string{`tolerations[0].toleration_seconds: toleration_seconds only applies to effect = "NoExecute"`}},
	{"too many node labels", `resource "aiplatform_resource_flavor" "x" {
  name        = "f"
  node_labels = { a = "1", b = "2", c = "3", d = "4", e = "5", f = "6", g = "7", h = "8", i = "9" }
}`, []string{"node_labels map must contain at most 8 elements"}},
	{"label key", `resource "aiplatform_resource_flavor" "x" {
  name        = "f"
  node_labels = { "a/b/c" = "v" }
}`, []string{"Invalid label key", `node_labels: "a/b/c"`}},
	{"priority out of int32", `resource "aiplatform_workload_priority_class" "x" {
  name  = "p"
  value = 2147483648
}`, []string{"value", "must be between -2147483648 and 2147483647"}},
	{"priority description too long", `resource "aiplatform_workload_priority_class" "x" {
  name        = "p"
  value       = 1
  description = "` + longName(2049) + `"
}`, []string{"description", "string length must be at most 2048"}},
	{"pool empty selector", `resource "aiplatform_gpu_node_pool" "x" {
  name     = "p"
  selector = {}
}`, []string{"selector map must contain at least 1 elements"}},
	{"pool too few nodes", `resource "aiplatform_gpu_node_pool" "x" {
  name      = "p"
  selector  = { "nvidia.com/gpu.product" = "NVIDIA-H100-80GB-HBM3" }
  min_nodes = 3
}`, []string{"Too few nodes in the pool", "matches 2 nodes (h100-0, h100-1); min_nodes is 3"}},
	{"pool negative min_nodes", `resource "aiplatform_gpu_node_pool" "x" {
  name      = "p"
  selector  = { a = "b" }
  min_nodes = -1
}`, []string{"min_nodes", "must be at least 0"}},
	{"capacity bad selector", `data "aiplatform_gpu_capacity" "x" {
  node_selector = { "bad key!" = "v" }
}`, []string{"Invalid label key", `node_selector: "bad key!"`}},
	{"provider request timeout", `resource "aiplatform_resource_flavor" "x" { name = "f" }`, nil}, // replaced below
}

func longName(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a'
	}
	return string(b)
}

// cq is a cluster queue with extra top-level attributes and one GPU resource.
func cq(extra, resource string) string {
	return `resource "aiplatform_cluster_queue" "x" {
  name = "bad-cq"
  ` + extra + `
  resource_groups = [{
    covered_resources = ["nvidia.com/gpu"]
    flavors           = [{ name = "h100", resources = [` + resource + `] }]
  }]
}`
}

func gpu(attrs string) string {
	if attrs == "" {
		return `{ name = "nvidia.com/gpu" }`
	}
	return `{ name = "nvidia.com/gpu", ` + attrs + ` }`
}

// snapshot is the cluster state bad input must not change: every Kueue
// object (name and resourceVersion) and every node's labels, annotations
// and taints.
func snapshot(t *testing.T, env *testenv.Env) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for _, r := range []string{"resourceflavors", "workloadpriorityclasses", "clusterqueues", "localqueues", "cohorts"} {
		list, err := env.Dynamic.Resource(schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: r}).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			out[r+"/"+o.GetNamespace()+"/"+o.GetName()] = o.GetResourceVersion()
		}
	}
	nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		keys := make([]string, 0, len(n.Annotations))
		for k := range n.Annotations {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out["node/"+n.Name] = fmt.Sprint(n.Labels, keys, n.Spec.Taints)
	}
	return out
}

func TestAccBadInput(t *testing.T) {
	env := acctest.Env(t)
	cases := badInputs[:len(badInputs)-1]
	cases = append(cases, struct {
		name   string
		config string
		err    []string
	}{"provider request timeout", "", []string{`request_timeout: "ten" is not a positive duration`}})
	if len(cases) < 50 {
		t.Fatalf("the suite promises at least 50 invalid configurations, has %d", len(cases))
	}
	before := snapshot(t, env)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := acctest.Provider(env) + c.config
			if c.config == "" {
				cfg = acctest.Provider(env, `request_timeout = "ten"`) + `resource "aiplatform_resource_flavor" "x" { name = "f" }`
			}
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: acctest.Factories,
				Steps:                    []resource.TestStep{{Config: cfg, PlanOnly: true, ExpectError: acctest.ErrorMatching(c.err...)}},
			})
		})
	}
	if after := snapshot(t, env); !reflect.DeepEqual(before, after) {
		t.Errorf("bad input changed the cluster:\nbefore %v\nafter  %v", before, after)
	}
	t.Logf("%d invalid configurations, each refused at plan, cluster unchanged", len(cases))
}
