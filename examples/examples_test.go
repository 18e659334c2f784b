// Package examples_test applies every example to the test cluster: each must
// apply, leave an empty plan (what `terraform plan -detailed-exitcode` exits
// 0 on), and import with the ID its import.sh documents.
package examples_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

func TestMain(m *testing.M) {
	opts := testenv.Options{}
	if os.Getenv("TF_ACC") != "" {
		dir, err := testenv.KueueCRDDir(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		opts.CRDDirs = []string{dir}
	}
	testenv.Main(m, opts)
}

var importLine = regexp.MustCompile(`(?m)^terraform import (\S+) (\S+)$`)

func TestAccResourceExamples(t *testing.T) {
	env := acctest.Env(t)
	dirs, err := filepath.Glob("resources/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no resource examples found: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			tf, err := os.ReadFile(filepath.Join(dir, "resource.tf"))
			if err != nil {
				t.Fatal(err)
			}
			imp, err := os.ReadFile(filepath.Join(dir, "import.sh"))
			if err != nil {
				t.Fatalf("every resource example needs an import.sh: %v", err)
			}
			m := importLine.FindSubmatch(imp)
			if m == nil {
				t.Fatalf("%s/import.sh has no `terraform import ADDRESS ID` line", dir)
			}
			cfg := acctest.Provider(env) + string(tf)
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: acctest.Factories,
				Steps: []resource.TestStep{
					{Config: cfg, ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
					{Config: cfg, PlanOnly: true},
					{Config: cfg, ResourceName: string(m[1]), ImportState: true, ImportStateId: string(m[2]), ImportStateVerify: true},
				},
			})
		})
	}
}

// Whole scenarios take the kubeconfig as a variable, as `make demo` passes it.
func TestAccScenarios(t *testing.T) {
	env := acctest.Env(t)
	for _, dir := range []string{"quickstart"} {
		t.Run(dir, func(t *testing.T) {
			vars := config.Variables{"kubeconfig": config.StringVariable(env.Kubeconfig)}
			abs, err := filepath.Abs(dir)
			if err != nil {
				t.Fatal(err)
			}
			// The scenario has its own provider block, so the in-process
			// provider is given per step.
			resource.Test(t, resource.TestCase{
				Steps: []resource.TestStep{
					{
						ProtoV6ProviderFactories: acctest.Factories,
						ConfigDirectory:          config.StaticDirectory(abs),
						ConfigVariables:          vars,
						ConfigPlanChecks:         resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
					},
					{ProtoV6ProviderFactories: acctest.Factories, ConfigDirectory: config.StaticDirectory(abs), ConfigVariables: vars, PlanOnly: true},
				},
			})
		})
	}
}
