package reliability_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// With TF_LOG=TRACE, a full apply, plan and destroy never print the token,
// and the state file does not hold it — under Terraform and under OpenTofu,
// whose logs and state are their own code.
func TestAccCredentialsNeverLeak(t *testing.T) {
	env := acctest.Env(t)
	acctest.ForEachCLI(t, func(t *testing.T, cli acctest.CLI) { credentialsNeverLeak(t, env, cli) })
}

func credentialsNeverLeak(t *testing.T, env *testenv.Env, cli acctest.CLI) {
	w := acctest.NewWorkspaceFor(t, env, "testdata/secrets", cli)
	w.Env = []string{"TF_LOG=TRACE", "TF_VAR_host=" + env.Host, "TF_VAR_token=" + env.Token, "TF_VAR_ca=" + string(env.CAData)}
	var logs strings.Builder
	for _, args := range [][]string{{"apply", "-auto-approve"}, {"plan"}, {"apply", "-auto-approve", "-refresh-only"}} {
		out, err := w.Run(args...)
		if err != nil {
			t.Fatal(err)
		}
		logs.WriteString(out)
	}
	if !strings.Contains(logs.String(), "[TRACE]") {
		t.Fatal("no TRACE lines captured: the test would prove nothing")
	}
	state, err := os.ReadFile(filepath.Join(w.Dir(), "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), env.Token) {
		t.Errorf("the token appears in the TRACE log (%d bytes of log)", logs.Len())
	}
	if strings.Contains(string(state), env.Token) {
		t.Errorf("the token appears in the state file")
	}
	t.Logf("%d bytes of TRACE log and %d bytes of state, no token", logs.Len(), len(state))
}

// The least-privilege setup of the docs (examples/rbac) is enough:
// examples/teams applies, plans empty and destroys with a ServiceAccount
// token bound to exactly that role, under Terraform and under OpenTofu.
// (examples/rbac's own test applies every example with it under Terraform.)
func TestAccLeastPrivilegeRole(t *testing.T) {
	env := acctest.Env(t)
	kubeconfig := acctest.LeastPrivilegeKubeconfig(t, env)
	acctest.ForEachCLI(t, func(t *testing.T, cli acctest.CLI) {
		w := acctest.NewWorkspaceFor(t, env, "../../examples/teams", cli)
		w.SetKubeconfig(kubeconfig) // apply, plan and the cleanup's destroy all use the role's token
		if out, err := w.Run("apply", "-auto-approve"); err != nil {
			t.Fatalf("%v\nmissing rules: %v", err, acctest.MissingRules(out))
		}
		if code, out := w.PlanExitCode(); code != 0 {
			t.Fatalf("plan -detailed-exitcode with the role's token exited %d:\n%s", code, out)
		}
	})
}
