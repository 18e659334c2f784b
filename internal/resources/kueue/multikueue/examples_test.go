package multikueue_test

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

// The resource examples of the docs (examples/resources/aiplatform_multikueue_*),
// which examples/examples_test.go lists as applied here: applied to the
// manager with the worker's kubeconfig, empty plan, imported by the IDs of
// their import.sh.
func TestAccMultiKueueResourceExamples(t *testing.T) {
	manager, worker := clustersOf(t)
	vars := config.Variables{"worker_kubeconfig": config.StringVariable(workerKubeconfig(t, worker))}
	for _, typeName := range []string{"aiplatform_multikueue_cluster", "aiplatform_multikueue_config"} {
		t.Run(typeName, func(t *testing.T) {
			ex := acctest.ResourceExample(t, typeName)
			cfg := acctest.Provider(manager) + ex.Config
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: acctest.Factories,
				Steps: []resource.TestStep{
					{Config: cfg, ConfigVariables: exampleVars(ex.Config, vars), ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
					{Config: cfg, ConfigVariables: exampleVars(ex.Config, vars), PlanOnly: true},
					{Config: cfg, ConfigVariables: exampleVars(ex.Config, vars), ResourceName: ex.Address, ImportState: true, ImportStateId: ex.ImportID,
						ImportStateVerify: true, ImportStateVerifyIgnore: []string{"kubeconfig_wo"}},
				},
			})
		})
	}
}

// exampleVars passes the variables an example declares.
func exampleVars(tf string, all config.Variables) config.Variables {
	out := config.Variables{}
	for name, v := range all {
		if strings.Contains(tf, `variable "`+name+`"`) {
			out[name] = v
		}
	}
	return out
}
