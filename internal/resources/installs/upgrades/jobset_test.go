package upgrades_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

// JobSet's chart upgraded in place from the previous default (0.11.1) to
// the default (0.12.0) under a running JobSet (issue #29). 0.12 adds failure
// policy actions to the JobSet CRD (in the chart's crds/, which the upgrade
// applies first). The JobSet and its pods keep their UIDs; the 0.12
// controller runs a JobSet created after; the plan after is empty.
func TestAccJobSetUpgradeWithLiveJobSet(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_jobset_controller.this"
	previous, current := podrunner.JobSetPreviousVersion, podrunner.JobSetVersion
	cfg := func(version string) string {
		return acctest.Provider(env) + fmt.Sprintf(`
resource "aiplatform_jobset_controller" "this" {
  version     = %q
  chart       = { path = %q }
  timeout     = "10m" # the first run builds JobSet 0.11.1 alone (~3 min cold)
  remove_crds = true
  values      = <<-EOT
    image:
      tag: %s
    controller:
      resources:
        requests:
          cpu: 100m
          memory: 128Mi
  EOT
}
`, strings.TrimPrefix(version, "v"), acctest.JobSetChartAt(t, version), version)
	}
	live := acctest.GangJobSet("live")
	jobs, _, _ := unstructured.NestedSlice(live.Object, "spec", "replicatedJobs")
	for _, j := range jobs {
		// kwok keeps the pods Running instead of completing them.
		_ = unstructured.SetNestedStringMap(j.(map[string]any), map[string]string{testenv.PodCompleteDelayAnnotation: "24h"},
			"template", "spec", "template", "metadata", "annotations")
	}
	_ = unstructured.SetNestedSlice(live.Object, jobs, "spec", "replicatedJobs")
	work := acctest.NewLiveWork(acctest.NewObject("jobset.x-k8s.io", "v1alpha2", "jobsets", "default", "live"),
		acctest.Pods{Namespace: "default", Selector: "jobset.sigs.k8s.io/jobset-name=live"}, 3)
	t.Cleanup(func() {
		bg := metav1.DeletePropagationBackground
		for _, name := range []string{"live", "after"} {
			_ = env.Dynamic.Resource(acctest.JobSetsGVR).Namespace("default").Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: &bg})
		}
	})
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg(previous),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "version", strings.TrimPrefix(previous, "v")),
					acctest.JobSetDeployment.Equal(env, 1, "status", "readyReplicas"),
					acctest.JobSetDeployment.Check(env, func(obj map[string]any) error {
						if img := fmt.Sprint(obj["spec"]); !strings.Contains(img, "jobset:"+previous) {
							return fmt.Errorf("the controller does not run image tag %s: %s", previous, img)
						}
						return nil
					}),
					acctest.JobSetCRD.Check(env, func(obj map[string]any) error {
						if strings.Contains(fmt.Sprint(obj["spec"]), "RestartJobAndIgnoreMaxRestarts") {
							return fmt.Errorf("the 0.11.1 JobSet CRD already has 0.12's failure policy actions")
						}
						return nil
					}),
					func(*terraform.State) error {
						_, err := acctest.CreateThroughWebhooks(env, acctest.JobSetsGVR, live)
						return err
					},
					work.Record(env),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config: cfg(current),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "version", strings.TrimPrefix(current, "v")),
					acctest.JobSetDeployment.Equal(env, 1, "status", "readyReplicas"),
					acctest.JobSetCRD.Check(env, func(obj map[string]any) error {
						if !strings.Contains(fmt.Sprint(obj["spec"]), "RestartJobAndIgnoreMaxRestarts") {
							return fmt.Errorf("the JobSet CRD is still 0.11.1's: no failure policy action RestartJobAndIgnoreMaxRestarts")
						}
						return nil
					}),
					work.Kept(env),
					func(*terraform.State) error {
						if _, err := acctest.CreateThroughWebhooks(env, acctest.JobSetsGVR, acctest.GangJobSet("after")); err != nil {
							return err
						}
						_, err := (acctest.Pods{Namespace: "default", Selector: "jobset.sigs.k8s.io/jobset-name=after"}).Await(env, 2*time.Minute, acctest.PodCount(3))
						return err
					},
				),
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(acctest.JobSetDeployment.Gone(env), acctest.JobSetCRD.Gone(env)),
	})
}
