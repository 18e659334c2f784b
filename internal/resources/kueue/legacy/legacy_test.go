// Package legacy_test runs the Kueue resources against a cluster that serves
// Kueue's API only at v1beta1, as Kueue ≤ 0.12 does (many clusters and
// tutorials still run it): the same configuration must work, written at
// v1beta1 with its field names.
package legacy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

func TestMain(m *testing.M) {
	opts := testenv.Options{}
	if os.Getenv("TF_ACC") != "" {
		dir, err := v1beta1OnlyCRDs()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer os.RemoveAll(dir)
		opts.CRDDirs = []string{dir}
	}
	testenv.Main(m, opts)
}

// v1beta1OnlyCRDs writes Kueue's CRDs with v1beta2 removed and v1beta1 the
// storage version into a temp dir.
func v1beta1OnlyCRDs() (string, error) {
	src, err := testenv.KueueCRDDir(context.Background())
	if err != nil {
		return "", err
	}
	out, err := os.MkdirTemp("", "kueue-v1beta1-crds-")
	if err != nil {
		return "", err
	}
	files, _ := filepath.Glob(filepath.Join(src, "*.yaml"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		var crd map[string]any
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			return "", err
		}
		spec := crd["spec"].(map[string]any)
		var kept []any
		for _, v := range spec["versions"].([]any) {
			vm := v.(map[string]any)
			if vm["name"] == "v1beta1" {
				vm["served"], vm["storage"] = true, true
				kept = append(kept, vm)
			}
		}
		if kept == nil {
			continue // kinds that never had v1beta1
		}
		spec["versions"] = kept
		delete(spec, "conversion")
		b, err := yaml.Marshal(crd)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(out, filepath.Base(f)), b, 0o644); err != nil {
			return "", err
		}
	}
	return out, nil
}

func v1beta1(resource, name string) acctest.Object {
	ns := ""
	if resource == "localqueues" {
		ns = "default"
	}
	return acctest.Object{GVR: schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: resource}, Namespace: ns, Name: name}
}

func TestAccKueueV1beta1Only(t *testing.T) {
	env := acctest.Env(t)
	cq := v1beta1("clusterqueues", "legacy")
	config := func(cohort string) string {
		return acctest.Provider(env) + `
resource "aiplatform_resource_flavor" "f" {
  name        = "legacy-flavor"
  node_labels = { "nvidia.com/gpu.product" = "NVIDIA-A100-SXM4-80GB" }
}

resource "aiplatform_workload_priority_class" "p" {
  name  = "legacy-priority"
  value = 100
}

resource "aiplatform_cluster_queue" "q" {
  name   = "legacy"
  cohort = "` + cohort + `"
  flavor_fungibility = { when_can_borrow = "MayStopSearch" }
  resource_groups = [{
    covered_resources = ["nvidia.com/gpu"]
    flavors = [{ name = aiplatform_resource_flavor.f.name, resources = [{ name = "nvidia.com/gpu", nominal_quota = "4", borrowing_limit = "2" }] }]
  }]
}

resource "aiplatform_local_queue" "l" {
  name          = "legacy"
  namespace     = "default"
  cluster_queue = aiplatform_cluster_queue.q.name
}
`
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config: config("ai"),
				Check: resource.ComposeAggregateTestCheckFunc(
					// v1beta1's names: spec.cohort, and Borrow for MayStopSearch.
					cq.Equal(env, "ai", "spec", "cohort"),
					cq.Equal(env, "Borrow", "spec", "flavorFungibility", "whenCanBorrow"),
					cq.Equal(env, "4", "spec", "resourceGroups", "0", "flavors", "0", "resources", "0", "nominalQuota"),
					v1beta1("localqueues", "legacy").Equal(env, "legacy", "spec", "clusterQueue"),
					v1beta1("workloadpriorityclasses", "legacy-priority").Equal(env, int64(100), "value"),
					resource.TestCheckResourceAttr("aiplatform_cluster_queue.q", "cohort", "ai"),
					resource.TestCheckResourceAttr("aiplatform_cluster_queue.q", "flavor_fungibility.when_can_borrow", "MayStopSearch"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config: config("ml"),
				Check:  cq.Equal(env, "ml", "spec", "cohort"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction("aiplatform_cluster_queue.q", plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
			{ResourceName: "aiplatform_cluster_queue.q", ImportState: true, ImportStateId: "legacy", ImportStateVerify: true},
			{
				PreConfig: func() { cq.Delete(t, env) },
				Config:    config("ml"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("aiplatform_cluster_queue.q", plancheck.ResourceActionCreate)},
				},
			},
		},
		CheckDestroy: cq.Gone(env),
	})
}
