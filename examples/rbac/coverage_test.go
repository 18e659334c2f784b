package rbac_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/provider"
)

// registeredTypes are the provider's resource types and data sources (the
// latter as data.<type>), asked of the provider itself.
func registeredTypes(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	p := provider.New("test")()
	var types []string
	for _, f := range p.Resources(ctx) {
		var resp resource.MetadataResponse
		f().Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "aiplatform"}, &resp)
		types = append(types, resp.TypeName)
	}
	for _, f := range p.DataSources(ctx) {
		var resp datasource.MetadataResponse
		f().Metadata(ctx, datasource.MetadataRequest{ProviderTypeName: "aiplatform"}, &resp)
		types = append(types, "data."+resp.TypeName)
	}
	if len(types) < 2 {
		t.Fatalf("the provider registers %d types: the test would prove nothing", len(types))
	}
	sort.Strings(types)
	return types
}

// Every resource type and data source the provider registers has its rules
// in examples/rbac/roles (a role naming it in rbac.aiplatform.dev/for, even
// with no rules when it never talks to the cluster), and no role is for a
// type the provider does not have. A new resource adds
// examples/rbac/roles/<type>.yaml (copy one of the same shape) and the
// guide's table row (docs/guides/rbac.md).
func TestEveryTypeHasRules(t *testing.T) {
	ex := acctest.LoadRBACExample(t)
	registered := registeredTypes(t)
	covered := map[string][]string{} // type → files
	for i, r := range ex.Roles {
		for _, typ := range acctest.For(r) {
			covered[typ] = append(covered[typ], ex.Files[i])
		}
	}
	isRegistered := map[string]bool{}
	for _, typ := range registered {
		isRegistered[typ] = true
		if len(covered[typ]) == 0 {
			t.Errorf("%s is registered in internal/provider/provider.go but no ClusterRole in examples/rbac/roles/ names it in %s: "+
				"add examples/rbac/roles/%s.yaml with the API groups, resources and verbs it uses (rules: [] if it never calls the API server)",
				typ, acctest.RoleFor, typ)
		}
	}
	for typ, files := range covered {
		if !isRegistered[typ] {
			t.Errorf("%v name %s in %s, which the provider does not register", files, typ, acctest.RoleFor)
		}
	}
}

// Each role is aggregated into the provider's role, is named after its
// file, and grants nothing by wildcard.
func TestRolesAreAggregatedAndExact(t *testing.T) {
	ex := acctest.LoadRBACExample(t)
	sel := ex.Role.AggregationRule
	if sel == nil || len(sel.ClusterRoleSelectors) != 1 || sel.ClusterRoleSelectors[0].MatchLabels[acctest.AggregateLabel] != "true" {
		t.Fatalf("provider.yaml's ClusterRole must aggregate the roles labelled %s=true, has %+v", acctest.AggregateLabel, sel)
	}
	if ex.Binding.RoleRef.Name != ex.Role.Name || len(ex.Binding.Subjects) != 1 || ex.Binding.Subjects[0].Name != ex.ServiceAccount.Name ||
		ex.Binding.Subjects[0].Namespace != ex.ServiceAccount.Namespace {
		t.Errorf("provider.yaml's binding must bind %s to the ServiceAccount %s/%s", ex.Role.Name, ex.ServiceAccount.Namespace, ex.ServiceAccount.Name)
	}
	for i, r := range ex.Roles {
		file := ex.Files[i]
		if r.Labels[acctest.AggregateLabel] != "true" {
			t.Errorf("%s: label %s: \"true\" is missing, so the provider's role would not hold its rules", file, acctest.AggregateLabel)
		}
		if want := ex.Role.Name + ":" + strings.TrimSuffix(file, ".yaml"); r.Name != want {
			t.Errorf("%s: name %q, want %q", file, r.Name, want)
		}
		for j, rule := range r.Rules {
			if wildcard(rule) {
				t.Errorf("%s: rule %d grants by wildcard: %s", file, j, rule.String())
			}
			if len(rule.Verbs) == 0 || len(rule.Resources) == 0 || len(rule.APIGroups) == 0 {
				t.Errorf("%s: rule %d is incomplete: %s", file, j, rule.String())
			}
		}
	}
}

func wildcard(r rbacv1.PolicyRule) bool {
	for _, list := range [][]string{r.APIGroups, r.Resources, r.Verbs, r.NonResourceURLs} {
		for _, s := range list {
			if strings.Contains(s, "*") {
				return true
			}
		}
	}
	return false
}

// The guide's table (docs/guides/rbac.md, from templates/guides/rbac.md.tmpl)
// lists each role's rules as they are in roles/. With -update-table the
// table is rewritten in both files.
func TestGuideTable(t *testing.T) {
	ex := acctest.LoadRBACExample(t)
	table := guideTable(ex)
	for _, rel := range []string{"templates/guides/rbac.md.tmpl", "docs/guides/rbac.md"} {
		path := filepath.Join("..", "..", rel)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := string(raw)
		start, end := strings.Index(s, tableStart), strings.Index(s, tableEnd)
		if start < 0 || end < start {
			t.Fatalf("%s: no %s … %s markers", rel, tableStart, tableEnd)
		}
		got := s[start+len(tableStart) : end]
		if got == table {
			continue
		}
		if os.Getenv("UPDATE_RBAC_TABLE") != "" {
			if err := os.WriteFile(path, []byte(s[:start+len(tableStart)]+table+s[end:]), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s: the table of rules differs from examples/rbac/roles; run UPDATE_RBAC_TABLE=1 go test ./examples/rbac -run TestGuideTable", rel)
	}
}

const (
	tableStart = "<!-- rbac table: generated from examples/rbac/roles by examples/rbac's TestGuideTable -->\n"
	tableEnd   = "<!-- end of rbac table -->"
)

func guideTable(ex acctest.RBACExample) string {
	var b strings.Builder
	b.WriteString("| type | API groups | resources | verbs |\n|---|---|---|---|\n")
	for _, r := range ex.Roles {
		typ := strings.Join(acctest.For(r), ", ")
		if len(r.Rules) == 0 {
			b.WriteString("| `" + typ + "` | — | — | none: never calls the API server |\n")
			continue
		}
		for i, rule := range r.Rules {
			name := ""
			if i == 0 {
				name = "`" + typ + "`"
			}
			groups := make([]string, len(rule.APIGroups))
			for j, g := range rule.APIGroups {
				if g == "" {
					g = "core"
				}
				groups[j] = g
			}
			verbs := strings.Join(rule.Verbs, ", ")
			if len(rule.ResourceNames) > 0 {
				verbs += " (only " + strings.Join(rule.ResourceNames, ", ") + ")"
			}
			b.WriteString("| " + name + " | " + strings.Join(groups, ", ") + " | " + strings.Join(rule.Resources, ", ") +
				" | " + verbs + " |\n")
		}
	}
	return b.String()
}

// A refused request in Terraform's wrapped diagnostic is named as the rule
// the role lacks.
func TestMissingRulesReadsWrappedDiagnostics(t *testing.T) {
	out := `cannot apply Cohort "platform": the provider's credentials are not allowed
        to: cohorts.kueue.x-k8s.io "platform" is forbidden: User
        "system:serviceaccount:default:terraform-aiplatform-cohort" cannot patch
        resource "cohorts" in API group "kueue.x-k8s.io" at the cluster scope
pods "x" is forbidden: User "u" cannot get resource "pods/log" in API group "" in the namespace "default"`
	got := acctest.MissingRules(out)
	want := []string{
		`{apiGroups: ["kueue.x-k8s.io"], resources: ["cohorts"], verbs: ["patch"]}`,
		`{apiGroups: [""], resources: ["pods/log"], verbs: ["get"]}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("MissingRules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
