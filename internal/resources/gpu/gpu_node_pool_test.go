package gpu_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// nodeCheck asserts on a live node.
func nodeCheck(env *testenv.Env, name string, check func(n *corev1.Node) error) resource.TestCheckFunc {
	return func(*terraform.State) error {
		n, err := env.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return check(n)
	}
}

func label(env *testenv.Env, node, key, want string) resource.TestCheckFunc {
	return nodeCheck(env, node, func(n *corev1.Node) error {
		if got, ok := n.Labels[key]; (want == "" && ok) || (want != "" && got != want) {
			return fmt.Errorf("node %s label %s = %q (present %v), want %q", node, key, got, ok, want)
		}
		return nil
	})
}

func taint(env *testenv.Env, node, key string, want bool) resource.TestCheckFunc {
	return nodeCheck(env, node, func(n *corev1.Node) error {
		for _, t := range n.Spec.Taints {
			if t.Key == key {
				if !want {
					return fmt.Errorf("node %s still has taint %s", node, key)
				}
				return nil
			}
		}
		if want {
			return fmt.Errorf("node %s lacks taint %s (has %v)", node, key, n.Spec.Taints)
		}
		return nil
	})
}

func TestAccGPUNodePool(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_gpu_node_pool.training"
	config := func(labels, taints, extra string) string {
		return acctest.Provider(env) + `
resource "aiplatform_gpu_node_pool" "training" {
  name     = "training"
  selector = { testpool = "np", "nvidia.com/gpu.product" = "` + h100 + `" }
  labels   = ` + labels + `
  taints   = ` + taints + `
  ` + extra + `
}
`
	}
	first := config(`{ "aiplatform.dev/pool" = "training" }`, `[{ key = "nvidia.com/gpu", value = "present", effect = "NoSchedule" }]`, "min_nodes = 2")
	second := config(`{ "aiplatform.dev/pool" = "inference" }`, "null", "")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: first,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "node_count", "2"),
					resource.TestCheckResourceAttr(addr, "node_names.#", "2"),
					resource.TestCheckResourceAttr(addr, "node_names.0", "np-0"),
					resource.TestCheckResourceAttr(addr, "gpu_product", h100),
					resource.TestCheckResourceAttr(addr, "gpus_per_node", "8"),
					resource.TestCheckResourceAttr(addr, "gpu_capacity", "16"),
					resource.TestCheckResourceAttr(addr, "gpu_allocatable", "16"),
					resource.TestCheckResourceAttr(addr, "cpu_allocatable", "64"),
					resource.TestCheckResourceAttr(addr, "memory_allocatable", "512Gi"),
					resource.TestCheckResourceAttr(addr, "pending_nodes.#", "0"),
					label(env, "np-0", "aiplatform.dev/pool", "training"),
					label(env, "np-1", "aiplatform.dev/pool", "training"),
					taint(env, "np-1", "nvidia.com/gpu", true),
					label(env, "cap-0", "aiplatform.dev/pool", ""), // outside the selector
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// A node joins: the plan names it and the new count; the apply labels it.
				PreConfig: func() {
					if _, err := env.AddNodes(context.Background(), testenv.NodePool{Name: "np", Count: 1, GPUs: 8, Product: h100, Labels: map[string]string{"testpool": "np"}}); err != nil {
						t.Fatal(err)
					}
				},
				Config: first,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("node_count"), knownvalue.Int64Exact(3)),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("gpu_allocatable"), knownvalue.Int64Exact(24)),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("pending_nodes"), knownvalue.ListSizeExact(0)),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					label(env, "np-2", "aiplatform.dev/pool", "training"),
					taint(env, "np-2", "nvidia.com/gpu", true),
				),
			},
			{
				// Someone else's taint on a pool node survives the pool's changes.
				PreConfig: func() {
					n, err := env.Client.CoreV1().Nodes().Get(context.Background(), "np-0", metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule})
					if _, err := env.Client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{FieldManager: "someone-else"}); err != nil {
						t.Fatal(err)
					}
				},
				Config: second,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					label(env, "np-0", "aiplatform.dev/pool", "inference"),
					taint(env, "np-0", "nvidia.com/gpu", false),
					taint(env, "np-0", "maintenance", true),
				),
			},
			{ResourceName: addr, ImportState: true, ImportStateId: "training", ImportStateVerify: true},
			{
				Config:      config(`{ "aiplatform.dev/pool" = "inference" }`, "null", "min_nodes = 10"),
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("Too few nodes in the pool", "matches 3 nodes (np-0, np-1, np-2); min_nodes is 10"),
			},
			{Config: second, PlanOnly: true},
		},
		// Destroy takes the pool's label and annotation off every node and
		// leaves other taints.
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			label(env, "np-0", "aiplatform.dev/pool", ""),
			label(env, "np-2", "aiplatform.dev/pool", ""),
			nodeCheck(env, "np-1", func(n *corev1.Node) error {
				if _, ok := n.Annotations["gpu-node-pool.aiplatform.terraform.io/training"]; ok {
					return fmt.Errorf("annotation left on np-1")
				}
				return nil
			}),
			taint(env, "np-0", "maintenance", true),
		),
	})
}
