package reliability_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

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

// The ClusterRole of the docs is enough: examples/teams applies, plans empty
// and destroys with a ServiceAccount token bound to exactly that role, under
// Terraform and under OpenTofu.
func TestAccLeastPrivilegeRole(t *testing.T) {
	env := acctest.Env(t)
	if env.External {
		t.Skip("creates RBAC objects and tokens; run against testenv")
	}
	ctx := context.Background()
	raw, err := os.ReadFile("../../examples/rbac/clusterrole.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(raw, &role); err != nil {
		t.Fatal(err)
	}
	rbac := env.Client.RbacV1()
	if _, err := rbac.ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{}) })
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "terraform", Namespace: "default"}}
	if _, err := env.Client.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.CoreV1().ServiceAccounts("default").Delete(ctx, "terraform", metav1.DeleteOptions{})
	})
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "terraform-aiplatform"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "terraform", Namespace: "default"}},
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{}) })
	expiry := int64(3600)
	tr, err := env.Client.CoreV1().ServiceAccounts("default").CreateToken(ctx, "terraform",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	writeTokenKubeconfig(t, env, kubeconfig, tr.Status.Token)

	acctest.ForEachCLI(t, func(t *testing.T, cli acctest.CLI) {
		w := acctest.NewWorkspaceFor(t, env, "../../examples/teams", cli)
		w.SetKubeconfig(kubeconfig) // apply, plan and the cleanup's destroy all use the role's token
		if _, err := w.Run("apply", "-auto-approve"); err != nil {
			t.Fatal(err)
		}
		if code, out := w.PlanExitCode(); code != 0 {
			t.Fatalf("plan -detailed-exitcode with the role's token exited %d:\n%s", code, out)
		}
	})
}

func writeTokenKubeconfig(t *testing.T, env *testenv.Env, path, token string) {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: env.Host, CertificateAuthorityData: env.CAData}
	cfg.AuthInfos["robot"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "robot"}
	cfg.CurrentContext = "c"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}
