package upgrades_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

// LWS's chart upgraded in place from the previous default (0.7.0) to the
// default (0.9.0) under a live group, as a platform team does on day 2.
// 0.9.0 moved its CRDs into the chart's crds/ directory, which Helm's
// upgrade never applies: the DisaggregatedSet CRD it adds and the
// LeaderWorkerSet CRD's new fields reach the cluster because the upgrade
// applies them first. The group keeps its UID and its pods (LWS's release
// notes say nothing restarts them), the new controller reconciles it (a
// second replica's pods appear), and the plans after are empty: the crds/
// CRDs are drift-checked like the rest of the release.
func TestAccLWSUpgradeWithLiveGroup(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_lws_controller.this"
	group := acctest.NewObject("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "default", "upgrade")
	disaggregated := acctest.NewObject("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "disaggregatedsets.disaggregatedset.x-k8s.io")
	pods := acctest.Pods{Namespace: "default", Selector: catalog.LWSNameLabel + "=upgrade"}
	cfg := func(version string, replicas int) string {
		return acctest.Provider(env) + acctest.LWSControllerBlock(acctest.LWSChartAt(t, version), "    image:\n      manager:\n        tag: "+version+"\n") +
			acctest.LWSGroupBlock("upgrade", replicas)
	}
	work := acctest.NewLiveWork(group, pods, 2)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg(podrunner.LWSPreviousVersion, 1),
				Check: resource.ComposeAggregateTestCheckFunc(
					acctest.LWSDeployment.Equal(env, 1, "status", "readyReplicas"),
					acctest.LWSDeployment.Equal(env, "registry.k8s.io/lws/lws:"+podrunner.LWSPreviousVersion, "spec", "template", "spec", "containers", "0", "image"),
					disaggregated.Gone(env),
					work.Record(env),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config: cfg(testenv.LWSVersion, 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						plancheck.ExpectResourceAction("aiplatform_lws_group.g", plancheck.ResourceActionNoop),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					acctest.LWSDeployment.Equal(env, 1, "status", "readyReplicas"),
					acctest.LWSDeployment.Equal(env, "registry.k8s.io/lws/lws:"+testenv.LWSVersion, "spec", "template", "spec", "containers", "0", "image"),
					disaggregated.Equal(env, "DisaggregatedSet", "spec", "names", "kind"),
					acctest.LWSCRD.Check(env, func(obj map[string]any) error {
						if !strings.Contains(fmt.Sprint(obj["spec"]), "volumeClaimTemplates") {
							return errors.New("the LeaderWorkerSet CRD is still 0.7.0's: no spec.leaderWorkerTemplate.volumeClaimTemplates")
						}
						return nil
					}),
					work.Kept(env),
				),
			},
			{
				Config:           cfg(testenv.LWSVersion, 2),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check: func(*terraform.State) error {
					_, err := pods.Await(env, 2*time.Minute, acctest.RunningPods(4))
					return err
				},
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(acctest.LWSDeployment.Gone(env), acctest.LWSCRD.Gone(env), disaggregated.Gone(env)),
	})
}
