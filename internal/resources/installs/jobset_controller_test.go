package installs_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

var (
	jobSetDeployment = object("apps", "v1", "deployments", "jobset-system", "jobset-controller")
	jobSetCRD        = object("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "jobsets.jobset.x-k8s.io")
	jobSetWebhooks   = object("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "", "jobset-validating-webhook-configuration")
	jobSetsGVR       = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
)

// jobSetChart is charts/jobset of sigs.k8s.io/jobset v0.12.0 in the module
// cache: the upstream chart at the registry's version (0.12.0).
func jobSetChart(t *testing.T) string { return jobSetChartAt(t, "v0.12.0") }

// jobSetChartAt is charts/jobset of a JobSet version in the module cache.
func jobSetChartAt(t *testing.T, version string) string {
	t.Helper()
	dir, err := testenv.ModuleDir(context.Background(), "sigs.k8s.io/jobset", version)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "charts", "jobset")
}

// jobSetBlock is an aiplatform_jobset_controller from the module's chart.
func jobSetBlock(t *testing.T, name, extra string) string {
	return fmt.Sprintf(`
resource "aiplatform_jobset_controller" %q {
  chart       = { path = %q }
  timeout     = "3m"
  remove_crds = true
  values      = <<-EOT
    controller:
      resources:
        requests:
          cpu: 100m
          memory: 128Mi
  EOT
%s
}
`, name, jobSetChart(t), extra)
}

func gangJobSet(name string, successTargets ...any) *unstructured.Unstructured {
	rj := func(n string, replicas, parallelism int64) map[string]any {
		return map[string]any{"name": n, "replicas": replicas, "template": map[string]any{"spec": map[string]any{
			"parallelism": parallelism, "completions": parallelism,
			"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never",
				"containers": []any{map[string]any{"name": "main", "image": "busybox:1.36", "command": []any{"true"}}}}},
		}}}
	}
	spec := map[string]any{"replicatedJobs": []any{rj("leader", 1, 1), rj("workers", 1, 2)}}
	if len(successTargets) > 0 {
		spec["successPolicy"] = map[string]any{"operator": "All", "targetReplicatedJobs": successTargets}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     spec,
	}}
}

// jobSetAdmitted: a JobSet created through the chart's webhooks is
// defaulted by the mutating one and gets its Jobs' pods from the real
// controller; one whose success policy names no replicated job is denied by
// the validating one.
func jobSetAdmitted(t *testing.T, env *testenv.Env) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		created, err := acctest.CreateThroughWebhooks(env, jobSetsGVR, gangJobSet("gang"))
		if err != nil {
			return fmt.Errorf("creating JobSet gang: %w", err)
		}
		defer func() {
			bg := metav1.DeletePropagationBackground
			_ = env.Dynamic.Resource(jobSetsGVR).Namespace("default").Delete(ctx, "gang", metav1.DeleteOptions{PropagationPolicy: &bg})
		}()
		if dns, _, _ := unstructured.NestedBool(created.Object, "spec", "network", "enableDNSHostnames"); !dns {
			return fmt.Errorf("JobSet's mutating webhook did not default spec.network.enableDNSHostnames: %v", created.Object["spec"])
		}
		if _, err := (acctest.Pods{Namespace: "default", Selector: "jobset.sigs.k8s.io/jobset-name=gang"}).Await(env, 2*time.Minute, acctest.PodCount(3)); err != nil {
			return err
		}
		_, err = acctest.CreateThroughWebhooks(env, jobSetsGVR, gangJobSet("bad", "nope"))
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
	cfg := acctest.Provider(env) + jobSetBlock(t, "this", "")
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
					jobSetDeployment.Equal(env, 1, "status", "readyReplicas"),
					since(t, "JobSet", &start),
					jobSetDeployment.Equal(env, "100m", "spec", "template", "spec", "containers", "0", "resources", "requests", "cpu"),
					jobSetCRD.Equal(env, "JobSet", "spec", "names", "kind"),
					jobSetWebhooks.Equal(env, "jobset-webhook-service", "webhooks", "0", "clientConfig", "service", "name"),
					jobSetAdmitted(t, env),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				PreConfig: func() {
					jobSetDeployment.Edit(t, env, "kubectl-edit", func(obj map[string]any) {
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
					jobSetDeployment.Equal(env, 1, "spec", "replicas"),
					jobSetDeployment.Equal(env, 1, "status", "readyReplicas"),
				),
			},
			{
				// A second JobSet (another namespace) is refused at plan.
				Config:      cfg + jobSetBlock(t, "other", `  namespace = "jobset-two"`),
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
				Config:      acctest.Provider(env) + jobSetBlock(t, "this", `  version = "0.11.0"`),
				PlanOnly:    true,
				ExpectError: acctest.ErrorMatching("Not the JobSet chart of this version", "is version 0.12.0, not 0.11.0"),
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(jobSetDeployment.Gone(env), jobSetCRD.Gone(env)),
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
`, strings.TrimPrefix(version, "v"), jobSetChartAt(t, version), version)
	}
	live := gangJobSet("live")
	jobs, _, _ := unstructured.NestedSlice(live.Object, "spec", "replicatedJobs")
	for _, j := range jobs {
		// kwok keeps the pods Running instead of completing them.
		_ = unstructured.SetNestedStringMap(j.(map[string]any), map[string]string{testenv.PodCompleteDelayAnnotation: "24h"},
			"template", "spec", "template", "metadata", "annotations")
	}
	_ = unstructured.SetNestedSlice(live.Object, jobs, "spec", "replicatedJobs")
	work := acctest.NewLiveWork(object("jobset.x-k8s.io", "v1alpha2", "jobsets", "default", "live"),
		acctest.Pods{Namespace: "default", Selector: "jobset.sigs.k8s.io/jobset-name=live"}, 3)
	t.Cleanup(func() {
		bg := metav1.DeletePropagationBackground
		for _, name := range []string{"live", "after"} {
			_ = env.Dynamic.Resource(jobSetsGVR).Namespace("default").Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: &bg})
		}
	})
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: cfg(previous),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "version", strings.TrimPrefix(previous, "v")),
					jobSetDeployment.Equal(env, 1, "status", "readyReplicas"),
					jobSetDeployment.Check(env, func(obj map[string]any) error {
						if img := fmt.Sprint(obj["spec"]); !strings.Contains(img, "jobset:"+previous) {
							return fmt.Errorf("the controller does not run image tag %s: %s", previous, img)
						}
						return nil
					}),
					jobSetCRD.Check(env, func(obj map[string]any) error {
						if strings.Contains(fmt.Sprint(obj["spec"]), "RestartJobAndIgnoreMaxRestarts") {
							return fmt.Errorf("the 0.11.1 JobSet CRD already has 0.12's failure policy actions")
						}
						return nil
					}),
					func(*terraform.State) error {
						_, err := acctest.CreateThroughWebhooks(env, jobSetsGVR, live)
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
					jobSetDeployment.Equal(env, 1, "status", "readyReplicas"),
					jobSetCRD.Check(env, func(obj map[string]any) error {
						if !strings.Contains(fmt.Sprint(obj["spec"]), "RestartJobAndIgnoreMaxRestarts") {
							return fmt.Errorf("the JobSet CRD is still 0.11.1's: no failure policy action RestartJobAndIgnoreMaxRestarts")
						}
						return nil
					}),
					work.Kept(env),
					func(*terraform.State) error {
						if _, err := acctest.CreateThroughWebhooks(env, jobSetsGVR, gangJobSet("after")); err != nil {
							return err
						}
						_, err := (acctest.Pods{Namespace: "default", Selector: "jobset.sigs.k8s.io/jobset-name=after"}).Await(env, 2*time.Minute, acctest.PodCount(3))
						return err
					},
				),
			},
		},
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(jobSetDeployment.Gone(env), jobSetCRD.Gone(env)),
	})
}
