// Package installs_test applies the install examples (Helm charts and the
// MPI Operator's manifests) and examples/platform with examples/rbac's
// least-privilege role, on a cluster of their own: nothing installed, the
// pod runner runs the charts' controllers. Offline, the charts come from the
// module cache (Volcano's and KubeRay's from the repository's stand-ins), as
// in internal/resources/installs.
package installs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{APIServerArgs: acctest.AuditArgs(), PodRunner: true, Nodes: []testenv.NodePool{{Name: "cpu", Count: 2}}})
}

// Each install example: apply, `plan -detailed-exitcode` exits 0, destroy,
// with only the roles of its types (examples/platform with the aggregated
// role). A refused request fails the test with
// the rule the role lacks.
func TestAccInstallsWithLeastPrivilege(t *testing.T) {
	env := acctest.Env(t)
	aggregated := acctest.LeastPrivilegeKubeconfig(t, env)
	jobSet := fmt.Sprintf("  chart = { path = %q }\n  remove_crds = true", moduleDir(t, "sigs.k8s.io/jobset", "v0.12.0", "charts", "jobset"))
	volcano := fmt.Sprintf("  chart = { path = %q }\n  remove_crds = true", repoDir(t, "testdata", "charts", "volcano"))
	cases := []struct {
		name string
		tf   func(t *testing.T) string
		vars []string
	}{
		{"aiplatform_kueue", func(t *testing.T) string {
			return withChart(t, example(t, "aiplatform_kueue"), "aiplatform_kueue",
				fmt.Sprintf("  chart = { path = %q }\n  remove_crds = true", moduleDir(t, "sigs.k8s.io/kueue", "v0.19.2", "charts", "kueue")))
		}, nil},
		{"aiplatform_jobset_controller", func(t *testing.T) string {
			return withChart(t, example(t, "aiplatform_jobset_controller"), "aiplatform_jobset_controller", jobSet)
		}, nil},
		{"aiplatform_trainer", func(t *testing.T) string {
			tf := withChart(t, example(t, "aiplatform_trainer"), "aiplatform_jobset_controller", jobSet)
			return withChart(t, tf, "aiplatform_trainer", fmt.Sprintf("  chart = { path = %q }\n  remove_crds = true",
				moduleDir(t, "github.com/kubeflow/trainer/v2", "v2.3.0", "charts", "kubeflow-trainer")))
		}, nil},
		{"aiplatform_volcano", func(t *testing.T) string {
			return withChart(t, example(t, "aiplatform_volcano"), "aiplatform_volcano", volcano)
		}, nil},
		{"aiplatform_volcano_queue", func(t *testing.T) string {
			return fmt.Sprintf("resource \"aiplatform_volcano\" \"this\" {\n  version = \"1.13.0\"\n%s\n}\n", volcano) +
				strings.Replace(example(t, "aiplatform_volcano_queue"), "  name ", "  depends_on = [aiplatform_volcano.this]\n  name ", 1)
		}, nil},
		{"aiplatform_kuberay_operator", func(t *testing.T) string {
			return withChart(t, example(t, "aiplatform_kuberay_operator"), "aiplatform_kuberay_operator",
				fmt.Sprintf("  chart = { path = %q }\n  remove_crds = true", acctest.KubeRayChart(t)))
		}, nil},
		{"aiplatform_lws_controller", func(t *testing.T) string {
			// The module's chart says version 0.1.0, not the registry's 0.9.0.
			tf := strings.Replace(example(t, "aiplatform_lws_controller"), `version = "0.9.0"`, `version = "0.1.0"`, 1)
			return withChart(t, tf, "aiplatform_lws_controller",
				fmt.Sprintf("  chart = { path = %q }\n  remove_crds = true", moduleDir(t, "sigs.k8s.io/lws", "v0.9.0", "charts", "lws")))
		}, nil},
		{"aiplatform_mpi_operator", func(t *testing.T) string {
			acctest.AwaitMPIOperatorPort(t)
			return withChart(t, example(t, "aiplatform_mpi_operator"), "aiplatform_mpi_operator",
				fmt.Sprintf("  manifests = { path = %q }\n  remove_crds = true\n  timeout = \"3m\"",
					moduleDir(t, "github.com/kubeflow/mpi-operator", "v0.8.2", "deploy", "v2beta1", "mpi-operator.yaml")))
		}, nil},
		{"platform", nil, []string{"TF_VAR_kueue_chart_path=" + moduleDir(t, "sigs.k8s.io/kueue", "v0.17.0", "charts", "kueue")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.tf == nil {
				acctest.ApplyPlanDestroy(t, env, repoDir(t, "examples", c.name), aggregated, c.vars...)
				return
			}
			src := acctest.FragmentWorkspace(t, c.tf(t))
			acctest.ApplyPlanDestroy(t, env, src, acctest.IdentityFor(t, env, c.name, src), c.vars...)
		})
	}
}

func repoDir(t *testing.T, parts ...string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(append([]string{root}, parts...)...)
}

func moduleDir(t *testing.T, mod, version string, parts ...string) string {
	t.Helper()
	dir, err := testenv.ModuleDir(context.Background(), mod, version)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(append([]string{dir}, parts...)...)
}

func example(t *testing.T, typeName string) string {
	t.Helper()
	b, err := os.ReadFile(repoDir(t, "examples", "resources", typeName, "resource.tf"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withChart adds lines to the body of `resource "<typ>" "<name>" {`.
func withChart(t *testing.T, tf, typ, lines string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^resource "` + typ + `" "[a-z_]+" \{\n`)
	loc := re.FindStringIndex(tf)
	if loc == nil {
		t.Fatalf("no %s block in the example", typ)
	}
	return tf[:loc[1]] + lines + "\n" + tf[loc[1]:]
}
