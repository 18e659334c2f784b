package acctest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// The least-privilege example (examples/rbac): provider.yaml holds the
// aggregated ClusterRole, the ServiceAccount and its binding; roles/ one
// ClusterRole per resource type or data source, each naming the types it is
// for in the RoleFor annotation and carrying the AggregateLabel.

const (
	// AggregateLabel selects the per-type ClusterRoles into the provider's role.
	AggregateLabel = "rbac.aiplatform.dev/aggregate-to-provider"
	// RoleFor is the annotation listing (comma-separated) the Terraform
	// types a ClusterRole of roles/ is for: aiplatform_x, data.aiplatform_y.
	RoleFor = "rbac.aiplatform.dev/for"
)

// RBACExample is examples/rbac parsed.
type RBACExample struct {
	Role           rbacv1.ClusterRole        // the aggregated role (provider.yaml)
	ServiceAccount corev1.ServiceAccount     // the identity Terraform runs as
	Binding        rbacv1.ClusterRoleBinding // role → identity
	Roles          []rbacv1.ClusterRole      // roles/*.yaml, by file name
	Files          []string                  // roles/*.yaml base names, as Roles
}

// LoadRBACExample reads examples/rbac of the repository.
func LoadRBACExample(t testing.TB) RBACExample {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "examples", "rbac")
	var ex RBACExample
	docs := readYAMLDocs(t, filepath.Join(dir, "provider.yaml"))
	for _, d := range docs {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(d, &meta); err != nil {
			t.Fatal(err)
		}
		var into any
		switch meta.Kind {
		case "ClusterRole":
			into = &ex.Role
		case "ServiceAccount":
			into = &ex.ServiceAccount
		case "ClusterRoleBinding":
			into = &ex.Binding
		default:
			t.Fatalf("provider.yaml: unexpected kind %q", meta.Kind)
		}
		if err := yaml.UnmarshalStrict(d, into); err != nil {
			t.Fatalf("provider.yaml: %s: %v", meta.Kind, err)
		}
	}
	if ex.Role.Name == "" || ex.ServiceAccount.Name == "" || ex.Binding.Name == "" {
		t.Fatal("provider.yaml must hold a ClusterRole, a ServiceAccount and a ClusterRoleBinding")
	}
	files, err := filepath.Glob(filepath.Join(dir, "roles", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no roles in %s/roles: %v", dir, err)
	}
	sort.Strings(files)
	for _, f := range files {
		docs := readYAMLDocs(t, f)
		if len(docs) != 1 {
			t.Fatalf("%s: want exactly one ClusterRole, got %d documents", f, len(docs))
		}
		var r rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict(docs[0], &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if r.Kind != "ClusterRole" {
			t.Fatalf("%s: kind %q, want ClusterRole", f, r.Kind)
		}
		ex.Roles = append(ex.Roles, r)
		ex.Files = append(ex.Files, filepath.Base(f))
	}
	return ex
}

// For lists the types a role of roles/ is for.
func For(r rbacv1.ClusterRole) []string {
	var out []string
	for _, s := range strings.Split(r.Annotations[RoleFor], ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func readYAMLDocs(t testing.TB, path string) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var docs [][]byte
	for {
		d, err := rd.Read()
		if err == io.EOF {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			docs = append(docs, d)
		}
	}
}

func stripComments(d []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(d, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// LeastPrivilegeKubeconfig applies examples/rbac to env as a user would
// (`kubectl apply -f examples/rbac/ -f examples/rbac/roles/`), with the
// provider's role holding the rules the control plane aggregates into it, and
// returns a kubeconfig with a token of the example's ServiceAccount: the only
// identity it holds is the example's. Everything is removed when t ends.
func LeastPrivilegeKubeconfig(t *testing.T, env *testenv.Env) string {
	t.Helper()
	if env.External {
		t.Skip("creates RBAC objects and tokens; run against testenv")
	}
	ex := LoadRBACExample(t)
	ctx := context.Background()
	rbac := env.Client.RbacV1()
	create := func(what string, err error, del func() error) {
		t.Helper()
		if err != nil {
			t.Fatalf("creating %s: %v", what, err)
		}
		t.Cleanup(func() {
			if err := del(); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s: %v", what, err)
			}
		})
	}
	for i := range ex.Roles {
		r := ex.Roles[i]
		_, err := rbac.ClusterRoles().Create(ctx, &r, metav1.CreateOptions{})
		create("ClusterRole "+r.Name, err, func() error { return rbac.ClusterRoles().Delete(ctx, r.Name, metav1.DeleteOptions{}) })
	}
	// The provider's role created with the union of the selected roles'
	// rules, which kube-controller-manager's ClusterRole aggregation (testenv
	// runs it) writes the same: the token is usable at once, not after the
	// controller's next sync.
	aggregated := ex.Role.DeepCopy()
	seen := map[string]bool{}
	for _, r := range ex.Roles {
		if r.Labels[AggregateLabel] != "true" {
			continue
		}
		for _, rule := range r.Rules {
			if k := rule.String(); !seen[k] {
				seen[k] = true
				aggregated.Rules = append(aggregated.Rules, rule)
			}
		}
	}
	_, err := rbac.ClusterRoles().Create(ctx, aggregated, metav1.CreateOptions{})
	create("ClusterRole "+ex.Role.Name, err, func() error { return rbac.ClusterRoles().Delete(ctx, ex.Role.Name, metav1.DeleteOptions{}) })
	sa := ex.ServiceAccount
	sas := env.Client.CoreV1().ServiceAccounts(sa.Namespace)
	_, err = sas.Create(ctx, &sa, metav1.CreateOptions{})
	create("ServiceAccount "+sa.Name, err, func() error { return sas.Delete(ctx, sa.Name, metav1.DeleteOptions{}) })
	t.Cleanup(func() { checkRefused(t, sa.Name) }) // after every workspace's destroy
	_, err = rbac.ClusterRoleBindings().Create(ctx, &ex.Binding, metav1.CreateOptions{})
	create("ClusterRoleBinding "+ex.Binding.Name, err, func() error {
		return rbac.ClusterRoleBindings().Delete(ctx, ex.Binding.Name, metav1.DeleteOptions{})
	})

	return tokenKubeconfig(t, env, sa.Namespace, sa.Name)
}

// Terraform wraps diagnostics, so any space may be a line break.
var forbidden = regexp.MustCompile(`cannot\s+(\w+)\s+resource\s+"([^"]+)"\s+in\s+API\s+group\s+"([^"]*)"`)

// MissingRules names, as RBAC rules, every request the API server refused
// in a CLI's output ("… cannot patch resource "nodes" in API group "" …"):
// what a role must add.
func MissingRules(out string) []string {
	seen := map[string]bool{}
	var rules []string
	for _, m := range forbidden.FindAllStringSubmatch(out, -1) {
		r := fmt.Sprintf(`{apiGroups: [%q], resources: [%q], verbs: [%q]}`, m[3], m[2], m[1])
		if !seen[r] {
			seen[r] = true
			rules = append(rules, r)
		}
	}
	return rules
}

// TypeRolesKubeconfig returns a kubeconfig with a token of a new
// ServiceAccount (default/<name>) bound to the roles of examples/rbac/roles
// for the given types only (aiplatform_x, data.aiplatform_y): a check that
// each type's role is enough on its own, as the guide says users may apply
// only those of the types they use. LeastPrivilegeKubeconfig must have
// created the roles. Everything is removed when t ends.
func TypeRolesKubeconfig(t *testing.T, env *testenv.Env, name string, types []string) string {
	t.Helper()
	ex := LoadRBACExample(t)
	ctx := context.Background()
	rbac := env.Client.RbacV1()
	sas := env.Client.CoreV1().ServiceAccounts("default")
	if _, err := sas.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ServiceAccount %s: %v", name, err)
	}
	t.Cleanup(func() { _ = sas.Delete(ctx, name, metav1.DeleteOptions{}) })
	var bound []rbacv1.ClusterRole
	t.Cleanup(func() { logUnused(t, name, bound) }) // after the workspace's destroy
	for _, typ := range types {
		role := ""
		for _, r := range ex.Roles {
			for _, f := range For(r) {
				if f == typ {
					role = r.Name
					bound = append(bound, r)
				}
			}
		}
		if role == "" {
			t.Fatalf("no role in examples/rbac/roles is for %s", typ)
		}
		b := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name + ":" + typ},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "default"}},
		}
		if _, err := rbac.ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatalf("binding %s: %v", role, err)
		}
		t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(ctx, b.Name, metav1.DeleteOptions{}) })
	}
	return tokenKubeconfig(t, env, "default", name)
}

// tokenKubeconfig writes a kubeconfig with a token of the ServiceAccount.
func tokenKubeconfig(t *testing.T, env *testenv.Env, namespace, name string) string {
	t.Helper()
	expiry := int64(3 * 3600)
	tr, err := env.Client.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: env.Host, CertificateAuthorityData: env.CAData}
	cfg.AuthInfos["terraform"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "terraform"}
	cfg.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

var typeRef = regexp.MustCompile(`(?m)^\s*(resource|data)\s+"(aiplatform_[a-z0-9_]+)"`)

// TypesIn lists the aiplatform types the .tf files of dir declare
// (data sources as data.<type>), each once.
func TypesIn(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no .tf files in %s", dir)
	}
	seen := map[string]bool{}
	var types []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range typeRef.FindAllStringSubmatch(string(b), -1) {
			typ := m[2]
			if m[1] == "data" {
				typ = "data." + typ
			}
			if !seen[typ] {
				seen[typ] = true
				types = append(types, typ)
			}
		}
	}
	sort.Strings(types)
	return types
}

// ApplyPlanDestroy runs src (a directory of .tf files with a kubeconfig
// variable) with the given kubeconfig: apply, `plan -detailed-exitcode`
// exiting 0, destroy. A refused request fails t with the rules the identity
// lacks. vars are added to the CLI's environment (TF_VAR_…).
func ApplyPlanDestroy(t *testing.T, env *testenv.Env, src, kubeconfig string, vars ...string) {
	t.Helper()
	start := time.Now()
	w := NewWorkspace(t, env, src)
	w.SetKubeconfig(kubeconfig) // the cleanup's destroy too
	w.Env = vars
	for _, args := range [][]string{{"apply", "-auto-approve"}, {"plan", "-detailed-exitcode"}, {"destroy", "-auto-approve"}} {
		if out, err := w.Run(args...); err != nil {
			what := strings.Join(args, " ") + " failed"
			if args[0] == "plan" {
				what = "plan -detailed-exitcode did not exit 0 (2 means changes)"
			}
			if missing := MissingRules(out); len(missing) > 0 {
				t.Fatalf("%s: the identity lacks:\n  %s\n\n%v", what, strings.Join(missing, "\n  "), err)
			}
			t.Fatalf("%s: %v", what, err)
		}
	}
	t.Logf("TIMING: applied, planned empty and destroyed in %s", time.Since(start).Round(100*time.Millisecond))
}

// FragmentWorkspace is a new directory holding tf (a resource or data source
// example, as the docs show it) and the provider block the scenarios have.
func FragmentWorkspace(t *testing.T, tf string) string {
	t.Helper()
	dir := t.TempDir()
	provider := RequiredProviders + "\nvariable \"kubeconfig\" {\n  type = string\n}\n\nprovider \"aiplatform\" {\n  config_path = var.kubeconfig\n}\n"
	for name, body := range map[string]string{"provider.tf": provider, "main.tf": tf} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// ExampleFragment is the resource.tf or data-source.tf of
// examples/<rel> (e.g. "resources/aiplatform_cohort").
func ExampleFragment(t *testing.T, rel string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"resource.tf", "data-source.tf"} {
		b, err := os.ReadFile(filepath.Join(root, "examples", rel, name))
		if err == nil {
			return string(b)
		}
		if !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	t.Fatalf("examples/%s has no resource.tf or data-source.tf", rel)
	return ""
}

// IdentityFor is TypeRolesKubeconfig for the types src declares, with a
// ServiceAccount named after the example.
func IdentityFor(t *testing.T, env *testenv.Env, example, src string) string {
	t.Helper()
	types := TypesIn(t, src)
	name := "terraform-" + strings.ReplaceAll(strings.ReplaceAll(filepath.Base(example), "_", "-"), ".", "-")
	t.Logf("identity %s bound to the roles of %v only", name, types)
	return TypeRolesKubeconfig(t, env, name, types)
}
