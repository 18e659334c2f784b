package installs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

var (
	jobSetWebhooks = object("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "", "jobset-validating-webhook-configuration")
)

// jobSetChart is charts/jobset of sigs.k8s.io/jobset v0.12.0 in the module
// cache: the upstream chart at the registry's version (0.12.0).
func jobSetChart(t *testing.T) string { return acctest.JobSetChartAt(t, "v0.12.0") }

// jobSetAdmitted: a JobSet created through the chart's webhooks is
// defaulted by the mutating one and gets its Jobs' pods from the real
// controller; one whose success policy names no replicated job is denied by
// the validating one.
func jobSetAdmitted(t *testing.T, env *testenv.Env) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		created, err := acctest.CreateThroughWebhooks(env, acctest.JobSetsGVR, acctest.GangJobSet("gang"))
		if err != nil {
			return fmt.Errorf("creating JobSet gang: %w", err)
		}
		defer func() {
			bg := metav1.DeletePropagationBackground
			_ = env.Dynamic.Resource(acctest.JobSetsGVR).Namespace("default").Delete(ctx, "gang", metav1.DeleteOptions{PropagationPolicy: &bg})
		}()
		if dns, _, _ := unstructured.NestedBool(created.Object, "spec", "network", "enableDNSHostnames"); !dns {
			return fmt.Errorf("JobSet's mutating webhook did not default spec.network.enableDNSHostnames: %v", created.Object["spec"])
		}
		if _, err := (acctest.Pods{Namespace: "default", Selector: "jobset.sigs.k8s.io/jobset-name=gang"}).Await(env, 2*time.Minute, acctest.PodCount(3)); err != nil {
			return err
		}
		_, err = acctest.CreateThroughWebhooks(env, acctest.JobSetsGVR, acctest.GangJobSet("bad", "nope"))
		if err == nil || !strings.Contains(err.Error(), "denied") || !strings.Contains(err.Error(), "nope") {
			return fmt.Errorf("a JobSet whose success policy names replicated job nope: %v, want a denial by JobSet's webhook", err)
		}
		return nil
	}
}

// since logs the time from *start to now: the apply started in PreConfig,
// and the install waits until the controllers are ready.
func since(t *testing.T, what string, start *time.Time) resource.TestCheckFunc {
	return func(*terraform.State) error {
		t.Logf("%s: %s from apply start to the controllers Ready", what, time.Since(*start).Round(100*time.Millisecond))
		return nil
	}
}

// JobSet's own chart: install (CRD, webhooks, controller ready, a JobSet
// admitted and one denied by the webhooks, run by the real controller),
// drift of the controller's Deployment put back, a second JobSet refused at
// plan with nothing created, import, uninstall removing the CRD.
func TestAccJobSetController(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_jobset_controller.this"
	cfg := acctest.Provider(env) + acctest.JobSetBlock(t, "this", "")
	var start time.Time
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				PreConfig: func() { start = time.Now() },
				Config:    cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "jobset-system/jobset"),
					resource.TestCheckResourceAttr(addr, "version", "0.12.0"),
					resource.TestCheckResourceAttr(addr, "status", "deployed"),
					resource.TestCheckResourceAttr(addr, "drift.#", "0"),
					acctest.JobSetDeployment.Equal(env, 1, "status", "readyReplicas"),
					since(t, "JobSet", &start),
					acctest.JobSetDeployment.Equal(env, "100m", "spec", "template", "spec", "containers", "0", "resources", "requests", "cpu"),
					acctest.JobSetCRD.Equal(env, "JobSet", "spec", "names", "kind"),
					jobSetWebhooks.Equal(env, "jobset-webhook-service", "webhooks", "0", "clientConfig", "service", "name"),
					jobSetAdmitted(t, env),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				PreConfig: func() {
					acctest.JobSetDeployment.Edit(t, env, "kubectl-edit", func(obj map[string]any) {
						obj["spec"].(map[string]any)["replicas"] = int64(2)
					})
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						acctest.DriftBefore{Addr: addr, Want: []string{"Deployment/jobset-system/jobset-controller: spec.replicas 2 → 1"}},
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					acctest.JobSetDeployment.Equal(env, 1, "spec", "replicas"),
					acctest.JobSetDeployment.Equal(env, 1, "status", "readyReplicas"),
				),
			},
			{
				// A second JobSet (another namespace) is refused at plan.
				Config:      cfg + acctest.JobSetBlock(t, "other", `  namespace = "jobset-two"`),
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("A second JobSet controller", "jobset-system/jobset", "Fix: keep one JobSet"),
			},
			{
				// Nothing of it was created.
				Config: cfg,
				Check: func(*terraform.State) error {
					_, err := env.Client.CoreV1().Namespaces().Get(context.Background(), "jobset-two", metav1.GetOptions{})
					if err == nil {
						return fmt.Errorf("namespace jobset-two exists after the refused plan")
					}
					return nil
				},
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				ResourceName: addr, ImportState: true, ImportStateId: "jobset-system/jobset", ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"chart", "chart.%", "chart.path", "chart.name", "chart.repository", "timeout", "remove_crds", "values"},
			},
			{
				// Refused at plan: the installed 0.12.0 stays.
				Config:      acctest.Provider(env) + acctest.JobSetBlock(t, "this", `  version = "0.11.0"`),
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("Not the JobSet chart of this version", "is version 0.12.0, not 0.11.0"),
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(acctest.JobSetDeployment.Gone(env), acctest.JobSetCRD.Gone(env)),
	})
}

// podEnv returns the value of an environment variable of a pod's container.
func podEnv(p corev1.Pod, container, name string) string {
	for _, c := range p.Spec.Containers {
		if c.Name != container {
			continue
		}
		for _, e := range c.Env {
			if e.Name == name {
				if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
					return "fieldRef:" + e.ValueFrom.FieldRef.FieldPath
				}
				return e.Value
			}
		}
	}
	return ""
}
