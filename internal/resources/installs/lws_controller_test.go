package installs_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
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

var (
	lwsDeployment = object("apps", "v1", "deployments", "lws-system", "lws-controller-manager")
	lwsCRD        = object("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "leaderworkersets.leaderworkerset.x-k8s.io")
	lwsWebhooks   = object("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "", "lws-validating-webhook-configuration")
)

// lwsChart is charts/lws of sigs.k8s.io/lws at the default version in the
// module cache: the upstream chart itself (its version there is 0.1.0).
func lwsChart(t *testing.T) string { return lwsChartAt(t, testenv.LWSVersion) }

// lwsChartAt is charts/lws of a version of sigs.k8s.io/lws in the module
// cache (every version's says 0.1.0; its image tag, "main", runs
// testenv.LWSVersion unless image.manager.tag names another version).
func lwsChartAt(t *testing.T, version string) string {
	t.Helper()
	dir, err := testenv.ModuleDir(context.Background(), "sigs.k8s.io/lws", version)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "charts", "lws")
}

// lwsControllerBlock is an aiplatform_lws_controller of the module chart at
// chart (version 0.1.0), with small requests; values adds to its values
// (YAML lines indented four spaces).
func lwsControllerBlock(chart, values string) string {
	return fmt.Sprintf(`
resource "aiplatform_lws_controller" "this" {
  chart       = { path = %q }
  version     = "0.1.0"
  timeout     = "3m"
  remove_crds = true
  values      = <<-EOT
%s    resources:
      requests:
        cpu: 100m
        memory: 256Mi
  EOT
}
`, chart, values)
}

// lwsGroupBlock is an aiplatform_lws_group "g" of busybox groups of two,
// created after the controller, not waited for.
func lwsGroupBlock(name string, replicas int) string {
	return fmt.Sprintf(`
resource "aiplatform_lws_group" "g" {
  name           = %q
  namespace      = "default"
  size           = 2
  replicas       = %d
  wait_for_ready = false
  worker = {
    image   = "busybox:1.36"
    command = ["sleep", "infinity"]
  }
  depends_on = [aiplatform_lws_controller.this]
}
`, name, replicas)
}

// LWS's own chart: install (CRD, webhooks, controller ready), drift of the
// controller's Deployment put back, import, uninstall removing the CRD. The
// chart's controller pods are run by testenv's pod runner as the real LWS
// controller (its readiness is the Deployment's); LeaderWorkerSets through
// the chart's webhooks are tested in internal/testenv
// (TestPodRunnerOperatorCharts).
func TestAccLWSController(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_lws_controller.this"
	cfg := acctest.Provider(env) + lwsControllerBlock(lwsChart(t), "")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "lws-system/lws"),
					resource.TestCheckResourceAttr(addr, "status", "deployed"),
					resource.TestCheckResourceAttr(addr, "drift.#", "0"),
					lwsDeployment.Equal(env, 1, "status", "readyReplicas"),
					lwsDeployment.Equal(env, "100m", "spec", "template", "spec", "containers", "0", "resources", "requests", "cpu"),
					lwsCRD.Equal(env, "LeaderWorkerSet", "spec", "names", "kind"),
					lwsWebhooks.Equal(env, "lws-webhook-service", "webhooks", "0", "clientConfig", "service", "name"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				PreConfig: func() {
					lwsDeployment.Edit(t, env, "kubectl-edit", func(obj map[string]any) {
						obj["spec"].(map[string]any)["replicas"] = int64(2)
					})
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						acctest.DriftBefore{Addr: addr, Want: []string{"Deployment/lws-system/lws-controller-manager: spec.replicas 2 → 1"}},
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: lwsDeployment.Equal(env, 1, "spec", "replicas"),
			},
			{
				ResourceName: addr, ImportState: true, ImportStateId: "lws-system/lws", ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"chart", "chart.%", "chart.path", "chart.name", "chart.repository", "timeout", "remove_crds", "values"},
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(lwsDeployment.Gone(env), lwsCRD.Gone(env)),
	})
}

// examples/resources/aiplatform_lws_controller with LWS's chart from the
// module cache (its version there is 0.1.0, not the registry's 0.9.0).
func TestAccLWSControllerExample(t *testing.T) {
	env := acctest.Env(t)
	tf := strings.Replace(example(t, "resources/aiplatform_lws_controller/resource.tf"), `version = "0.9.0"`, `version = "0.1.0"`, 1)
	if !strings.Contains(tf, `version = "0.1.0"`) {
		t.Fatal(`the example no longer says version = "0.9.0"`)
	}
	cfg := acctest.Provider(env) + withChart(t, tf, "aiplatform_lws_controller",
		fmt.Sprintf("  chart = { path = %q }\n  remove_crds = true", lwsChart(t)))
	addr, id := importOf(t, "aiplatform_lws_controller")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config:           cfg,
				Check:            lwsDeployment.Equal(env, 1, "status", "readyReplicas"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{Config: cfg, ResourceName: addr, ImportState: true, ImportStateId: id, ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"chart", "chart.%", "chart.path", "chart.name", "chart.repository", "timeout", "values", "remove_crds", "revision"}},
		},
		CheckDestroy: lwsDeployment.Gone(env),
	})
}

// An install that runs out of timeouts.create fails naming that timeout and
// how to raise it, and leaves nothing behind (the failed release is
// uninstalled, as Helm's --atomic does); the deprecated timeout still
// applies where the block does not set an operation, and the block wins
// over it where it does.
func TestAccInstallTimeouts(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_lws_controller.this"
	release := object("", "v1", "secrets", "lws-system", "sh.helm.release.v1.lws.v1")
	cfg := func(timeouts string) string {
		return acctest.Provider(env) + fmt.Sprintf(`
resource "aiplatform_lws_controller" "this" {
  chart       = { path = %q }
  version     = "0.1.0"
  remove_crds = true
%s
}
`, lwsChart(t), timeouts)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				// 1 s cannot see the controller ready; the deprecated
				// timeout's 3m does not rescue it.
				Config: cfg(`  timeout = "3m"
  timeouts {
    create = "1s"
  }`),
				ExpectError: acctest.ErrorMatching("Installing LeaderWorkerSet failed", "the failed release was removed",
					"not done within 1s", `timeouts { create = "…" }`),
			},
			{
				PreConfig: func() {
					if err := resource.ComposeAggregateTestCheckFunc(release.Gone(env), lwsDeployment.Gone(env))(nil); err != nil {
						t.Fatalf("the failed install left something behind: %v", err)
					}
				},
				// timeouts sets only delete: create waits as long as the
				// deprecated timeout says.
				Config: cfg(`  timeout = "3m"
  timeouts {
    delete = "2m"
  }`),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "status", "deployed"),
					resource.TestCheckResourceAttr(addr, "timeouts.delete", "2m"),
					lwsDeployment.Equal(env, 1, "status", "readyReplicas"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// Changing only timeouts is an in-place update that
				// touches no object.
				Config: cfg(`  timeout = "3m"
  timeouts {
    delete = "3m"
    update = "3m"
  }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.TestCheckResourceAttr(addr, "timeouts.update", "3m"),
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(lwsDeployment.Gone(env), lwsCRD.Gone(env)),
	})
}

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
	group := object("leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "default", "upgrade")
	disaggregated := object("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "disaggregatedsets.disaggregatedset.x-k8s.io")
	pods := acctest.Pods{Namespace: "default", Selector: catalog.LWSNameLabel + "=upgrade"}
	cfg := func(version string, replicas int) string {
		return acctest.Provider(env) + lwsControllerBlock(lwsChartAt(t, version), "    image:\n      manager:\n        tag: "+version+"\n") +
			lwsGroupBlock("upgrade", replicas)
	}
	work := acctest.NewLiveWork(group, pods, 2)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg(podrunner.LWSPreviousVersion, 1),
				Check: resource.ComposeAggregateTestCheckFunc(
					lwsDeployment.Equal(env, 1, "status", "readyReplicas"),
					lwsDeployment.Equal(env, "registry.k8s.io/lws/lws:"+podrunner.LWSPreviousVersion, "spec", "template", "spec", "containers", "0", "image"),
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
					lwsDeployment.Equal(env, 1, "status", "readyReplicas"),
					lwsDeployment.Equal(env, "registry.k8s.io/lws/lws:"+testenv.LWSVersion, "spec", "template", "spec", "containers", "0", "image"),
					disaggregated.Equal(env, "DisaggregatedSet", "spec", "names", "kind"),
					lwsCRD.Check(env, func(obj map[string]any) error {
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
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(lwsDeployment.Gone(env), lwsCRD.Gone(env), disaggregated.Gone(env)),
	})
}
