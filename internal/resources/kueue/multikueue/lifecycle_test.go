package multikueue_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

const lifecycleConfig = `
variable "kubeconfig" {
  type      = string
  sensitive = true
}

resource "aiplatform_multikueue_cluster" "w" {
  name              = "lifecycle"
  kubeconfig_secret = "lifecycle-kubeconfig"
  kubeconfig_wo     = var.kubeconfig
}

resource "aiplatform_multikueue_config" "c" {
  name     = "lifecycle"
  clusters = [aiplatform_multikueue_cluster.w.name]
}
`

// A worker given by a write-only kubeconfig: the Secret is written, state
// holds only the kubeconfig's SHA-256, Kueue marks the worker Active. Both
// resources import; edits and deletes by hand — of the MultiKueueCluster, of
// the MultiKueueConfig, of the Secret's kubeconfig, of the Secret — plan an
// update or a create and are repaired; a new kubeconfig updates the Secret.
func TestAccMultiKueueClusterLifecycle(t *testing.T) {
	manager, worker := clustersOf(t)
	kc := workerKubeconfig(t, worker)
	rotated := kc + "# rotated\n"
	mkc, mkcfg, sec := kueueObject("multikueueclusters", "", "lifecycle"), kueueObject("multikueueconfigs", "", "lifecycle"), secret("lifecycle-kubeconfig")
	moved := secret("lifecycle-kubeconfig-2")
	clusterAddr, configAddr := "aiplatform_multikueue_cluster.w", "aiplatform_multikueue_config.c"
	vars := func(kubeconfig string) config.Variables {
		return config.Variables{"kubeconfig": config.StringVariable(kubeconfig)}
	}
	p, forced := acctest.Provider(manager), acctest.Provider(manager, "force_conflicts = true")
	secretHolds := func(kubeconfig string) resource.TestCheckFunc {
		return sec.Check(manager, func(obj map[string]any) error {
			data, _ := obj["data"].(map[string]any)
			if data["kubeconfig"] != base64.StdEncoding.EncodeToString([]byte(kubeconfig)) {
				return fmt.Errorf("Secret %s does not hold the configured kubeconfig", sec.Name)
			}
			labels, _ := obj["metadata"].(map[string]any)["labels"].(map[string]any)
			if labels["aiplatform.dev/multikueue-cluster"] != "lifecycle" {
				return fmt.Errorf("Secret %s labels %v", sec.Name, labels)
			}
			return nil
		})
	}
	applied := func(kubeconfig string) resource.TestCheckFunc {
		return resource.ComposeAggregateTestCheckFunc(
			mkc.Equal(manager, "lifecycle-kubeconfig", "spec", "clusterSource", "kubeConfig", "location"),
			mkc.Equal(manager, "Secret", "spec", "clusterSource", "kubeConfig", "locationType"),
			mkcfg.Equal(manager, "[lifecycle]", "spec", "clusters"),
			secretHolds(kubeconfig),
			resource.TestCheckResourceAttr(clusterAddr, "kubeconfig_sha256", sha(kubeconfig)),
			resource.TestCheckNoResourceAttr(clusterAddr, "kubeconfig_wo"),
			resource.TestCheckResourceAttr(clusterAddr, "active", "true"),
			resource.TestCheckResourceAttr(clusterAddr, "kueue_namespace", testenv.KueueNamespace),
		)
	}
	empty := resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}
	expect := func(clusterAction, configAction plancheck.ResourceActionType) resource.ConfigPlanChecks {
		return resource.ConfigPlanChecks{
			PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(clusterAddr, clusterAction),
				plancheck.ExpectResourceAction(configAddr, configAction),
			},
			PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{Config: p + lifecycleConfig, ConfigVariables: vars(kc), Check: applied(kc), ConfigPlanChecks: empty},
			{Config: p + lifecycleConfig, ConfigVariables: vars(kc), ResourceName: clusterAddr, ImportState: true, ImportStateId: "lifecycle",
				ImportStateVerify: true, ImportStateVerifyIgnore: []string{"kubeconfig_wo"}},
			{Config: p + lifecycleConfig, ConfigVariables: vars(kc), ResourceName: configAddr, ImportState: true, ImportStateId: "lifecycle", ImportStateVerify: true},
			{
				// Edited by hand: the Secret's location and the config's
				// clusters; force_conflicts takes them back.
				PreConfig: func() {
					mkc.Edit(t, manager, "someone-else", func(obj map[string]any) {
						obj["spec"].(map[string]any)["clusterSource"].(map[string]any)["kubeConfig"].(map[string]any)["location"] = "elsewhere"
					})
					mkcfg.Edit(t, manager, "someone-else", func(obj map[string]any) {
						obj["spec"].(map[string]any)["clusters"] = []any{"lifecycle", "other"}
					})
				},
				Config: forced + lifecycleConfig, ConfigVariables: vars(kc),
				ConfigPlanChecks: expect(plancheck.ResourceActionUpdate, plancheck.ResourceActionUpdate),
				Check:            applied(kc),
			},
			{
				// The Secret's kubeconfig replaced by hand: its hash differs
				// from the configuration's, so the plan updates it (taking the
				// field back from the other manager with force_conflicts).
				PreConfig: func() {
					sec.Edit(t, manager, "someone-else", func(obj map[string]any) {
						obj["data"] = map[string]any{"kubeconfig": base64.StdEncoding.EncodeToString([]byte("apiVersion: v1\nkind: Config\n"))}
					})
				},
				Config: forced + lifecycleConfig, ConfigVariables: vars(kc),
				ConfigPlanChecks: expect(plancheck.ResourceActionUpdate, plancheck.ResourceActionNoop),
				Check:            applied(kc),
			},
			{
				PreConfig: func() { sec.Delete(t, manager) },
				Config:    p + lifecycleConfig, ConfigVariables: vars(kc),
				ConfigPlanChecks: expect(plancheck.ResourceActionUpdate, plancheck.ResourceActionNoop),
				Check:            applied(kc),
			},
			{
				PreConfig: func() { mkcfg.Delete(t, manager); mkc.Delete(t, manager) },
				Config:    p + lifecycleConfig, ConfigVariables: vars(kc),
				ConfigPlanChecks: expect(plancheck.ResourceActionCreate, plancheck.ResourceActionCreate),
				Check:            applied(kc),
			},
			{
				// A new kubeconfig (rotated credentials) rewrites the Secret.
				Config: p + lifecycleConfig, ConfigVariables: vars(rotated),
				ConfigPlanChecks: expect(plancheck.ResourceActionUpdate, plancheck.ResourceActionNoop),
				Check:            applied(rotated),
			},
			{
				// Another Secret: written, and the one this resource wrote
				// before is deleted.
				Config: p + strings.Replace(lifecycleConfig, `"lifecycle-kubeconfig"`, `"lifecycle-kubeconfig-2"`, 1), ConfigVariables: vars(rotated),
				ConfigPlanChecks: expect(plancheck.ResourceActionUpdate, plancheck.ResourceActionNoop),
				Check: resource.ComposeAggregateTestCheckFunc(
					mkc.Equal(manager, "lifecycle-kubeconfig-2", "spec", "clusterSource", "kubeConfig", "location"),
					sec.Gone(manager),
					moved.Equal(manager, "lifecycle", "metadata", "labels", "aiplatform.dev/multikueue-cluster"),
					resource.TestCheckResourceAttr(clusterAddr, "kubeconfig_sha256", sha(rotated)),
					resource.TestCheckResourceAttr(clusterAddr, "active", "true"),
				),
			},
		},
		CheckDestroy: resource.ComposeTestCheckFunc(mkc.Gone(manager), mkcfg.Gone(manager), sec.Gone(manager), moved.Gone(manager)),
	})
}
