package installs_test

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

var volcanoConfigMap = object("", "v1", "configmaps", "volcano-system", "volcano-scheduler-configmap")

// Volcano (the stand-in chart) with a typed scheduler configuration, and a
// queue that needs its CRDs, in one apply; import of both.
func TestAccVolcanoAndQueue(t *testing.T) {
	env := acctest.Env(t)
	queue := object("scheduling.volcano.sh", "v1beta1", "queues", "", "team-a")
	cfg := func(weight string) string {
		return acctest.Provider(env) + volcanoBlock(t, `  actions      = ["enqueue", "allocate", "backfill"]
  plugin_tiers = [["priority", "gang"], ["drf", "proportion", "binpack"]]`) + `
resource "aiplatform_volcano_queue" "team_a" {
  name        = "team-a"
  weight      = ` + weight + `
  parent      = "root"
  reclaimable = false
  capability  = { "nvidia.com/gpu" = "16", cpu = "64" }
  deserved    = { "nvidia.com/gpu" = "8" }
  guarantee   = { cpu = "8000m" }
  depends_on  = [aiplatform_volcano.this]
}
`
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg("2"),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("aiplatform_volcano.this", "id", "volcano-system/volcano"),
					resource.TestCheckResourceAttr("aiplatform_volcano.this", "drift.#", "0"),
					volcanoSched.Equal(env, 1, "status", "readyReplicas"),
					volcanoConfigMap.Equal(env, "actions: \"enqueue, allocate, backfill\"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n- plugins:\n  - name: drf\n  - name: proportion\n  - name: binpack",
						"data", "volcano-scheduler.conf"),
					queue.Equal(env, 2, "spec", "weight"),
					queue.Equal(env, "16", "spec", "capability", "nvidia.com/gpu"),
					queue.Equal(env, "8000m", "spec", "guarantee", "resource", "cpu"),
					queue.Equal(env, false, "spec", "reclaimable"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config: cfg("4"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("aiplatform_volcano_queue.team_a", plancheck.ResourceActionUpdate),
						plancheck.ExpectResourceAction("aiplatform_volcano.this", plancheck.ResourceActionNoop),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: queue.Equal(env, 4, "spec", "weight"),
			},
			{ResourceName: "aiplatform_volcano_queue.team_a", ImportState: true, ImportStateId: "team-a", ImportStateVerify: true},
			{
				ResourceName: "aiplatform_volcano.this", ImportState: true, ImportStateId: "volcano-system/volcano", ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"chart", "chart.%", "chart.path", "chart.name", "chart.repository", "timeout", "remove_crds"},
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(queue.Gone(env), volcanoSched.Gone(env), volcanoCRD.Gone(env)),
	})
}

// Kueue with the pod integration first; Volcano added later is refused,
// naming the live Kueue configuration and the fix; the fix and Volcano in
// one apply work; turning the pod integration on again is refused from
// Kueue's side.
func TestAccConflictKueueFirst(t *testing.T) {
	env := acctest.Env(t)
	podKueue := kueueBlock(t, `  integrations = ["batch/job", "pod", "deployment"]`)
	jobKueue := kueueBlock(t, `  integrations = ["batch/job", "trainer.kubeflow.org/trainjob"]`)
	volcano := volcanoBlock(t, `  depends_on = [aiplatform_kueue.this]`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{Config: acctest.Provider(env) + podKueue, Check: kueueConfig.Check(env, wantFrameworks("[batch/job deployment pod] manage=false"))},
			{
				Config: acctest.Provider(env) + podKueue + volcanoBlock(t, ""),
				ExpectError: acctest.ErrorMatching("Kueue's configuration conflicts with Volcano",
					"the Kueue in namespace kueue-system (ConfigMap kueue-manager-config): integrations.frameworks includes deployment, pod",
					"Volcano would silently stop scheduling",
					`Fix: in aiplatform_kueue set integrations = ["batch/job"] and manage_jobs_without_queue_name = false`),
			},
			{
				// The fix planned first (depends_on), Volcano after it, in one apply.
				Config: acctest.Provider(env) + jobKueue + volcano,
				Check: resource.ComposeAggregateTestCheckFunc(
					kueueConfig.Check(env, wantFrameworks("[batch/job trainer.kubeflow.org/trainjob] manage=false")),
					volcanoSched.Equal(env, 1, "status", "readyReplicas"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config: acctest.Provider(env) + kueueBlock(t, `  integrations = ["batch/job"]
  manage_jobs_without_queue_name = true`) + volcano,
				ExpectError: acctest.ErrorMatching("Kueue's configuration conflicts with Volcano", "Volcano is present",
					"manage_jobs_without_queue_name = true makes Kueue suspend every Job",
					`Fix: set integrations = ["batch/job"] and manage_jobs_without_queue_name = false`),
			},
			{
				// Refused at plan: nothing changed in the cluster.
				Config:   acctest.Provider(env) + jobKueue + volcano,
				PlanOnly: true,
				Check:    kueueConfig.Check(env, wantFrameworks("[batch/job trainer.kubeflow.org/trainjob] manage=false")),
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(kueueDeployment.Gone(env), volcanoSched.Gone(env)),
	})
}

// Volcano first; Kueue with a pod-based integration is refused, naming the
// scheduler Deployment; both in one new configuration are refused at plan,
// before anything is installed.
func TestAccConflictVolcanoFirst(t *testing.T) {
	env := acctest.Env(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{Config: acctest.Provider(env) + volcanoBlock(t, "")},
			{
				Config: acctest.Provider(env) + volcanoBlock(t, "") + kueueBlock(t, `  integrations = ["batch/job", "statefulset"]`),
				ExpectError: acctest.ErrorMatching("Kueue's configuration conflicts with Volcano", "Volcano is present",
					"the cluster runs the Volcano scheduler (Deployment volcano-system/volcano-scheduler)",
					`integrations ["statefulset"] make Kueue's webhook take every Pod created without the kueue.x-k8s.io/queue-name label`,
					`Fix: set integrations = ["batch/job"]`),
			},
			{
				// Job-level integrations coexist.
				Config: acctest.Provider(env) + volcanoBlock(t, "") + kueueBlock(t, ""),
				Check:  kueueConfig.Check(env, wantFrameworks("[batch/job] manage=false")),
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(kueueDeployment.Gone(env), volcanoSched.Gone(env)),
	})
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config:      acctest.Provider(env) + volcanoBlock(t, "") + kueueBlock(t, `  integrations = ["pod"]`),
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("conflicts with Volcano", "planned in this configuration"),
			},
		},
	})
}

// One apply without Kueue installed: the install and the queues that need
// its CRDs. (CRDs an earlier test kept are adopted by the install; run alone
// the test starts from a cluster without them.) The queues go through the
// chart's webhooks to the real Kueue manager, which makes the ClusterQueue
// Active.
func TestAccKueueAndQueuesInOneApply(t *testing.T) {
	env := acctest.Env(t)
	cq := object("kueue.x-k8s.io", "v1beta2", "clusterqueues", "", "team-a")
	config := acctest.Provider(env) + kueueBlock(t, "") + `
resource "aiplatform_resource_flavor" "cpu" {
  name       = "cpu"
  depends_on = [aiplatform_kueue.this]
}

resource "aiplatform_cluster_queue" "team_a" {
  name = "team-a"
  resource_groups = [{
    covered_resources = ["cpu"]
    flavors = [{
      name      = aiplatform_resource_flavor.cpu.name
      resources = [{ name = "cpu", nominal_quota = "8" }]
    }]
  }]
}

resource "aiplatform_local_queue" "team_a" {
  name          = "team-a"
  namespace     = "default"
  cluster_queue = aiplatform_cluster_queue.team_a.name
}
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					kueueDeployment.Equal(env, 1, "status", "readyReplicas"),
					cq.Equal(env, "8", "spec", "resourceGroups", "0", "flavors", "0", "resources", "0", "nominalQuota"),
					conditionTrue(env, cq, "Active"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(cq.Gone(env), kueueDeployment.Gone(env)),
	})
}
