package acctest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// The API server's audit log says which requests each least-privilege
// identity made: rules a role grants that its examples never used are
// candidates for removal (a rule may still be needed on a path the examples
// do not take: an update, an error, an import).

var auditLog string

// AuditArgs are kube-apiserver flags (testenv.Options.APIServerArgs) that
// log, at Metadata level, the requests of ServiceAccounts of namespace
// default — the identities of LeastPrivilegeKubeconfig and
// TypeRolesKubeconfig. Called from TestMain; nil if the policy cannot be
// written.
func AuditArgs() []string {
	dir, err := os.MkdirTemp("", "rbac-audit-")
	if err != nil {
		return nil
	}
	policy := filepath.Join(dir, "policy.yaml")
	body := `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    userGroups: ["system:serviceaccounts:default"]
  - level: None
`
	if err := os.WriteFile(policy, []byte(body), 0o644); err != nil {
		return nil
	}
	auditLog = filepath.Join(dir, "audit.log")
	return []string{"--audit-policy-file=" + policy, "--audit-log-path=" + auditLog, "--audit-log-mode=blocking"}
}

type auditEvent struct {
	Stage string `json:"stage"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	Verb           string            `json:"verb"`
	Annotations    map[string]string `json:"annotations"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	ObjectRef *struct {
		APIGroup    string `json:"apiGroup"`
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
}

// authzDecision is the audit annotation with the authorizer's decision
// ("allow" or "forbid").
const authzDecision = "authorization.k8s.io/decision"

// usedBy reads the audit log: group|resource|verb of every resource request
// the user made, and of those the API server refused (403).
func usedBy(username string) (used, refused map[string]bool, err error) {
	f, err := os.Open(auditLog)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	used, refused = map[string]bool{}, map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Stage != "ResponseComplete" || e.User.Username != username || e.ObjectRef == nil || e.ObjectRef.Resource == "" {
			continue
		}
		res := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			res += "/" + e.ObjectRef.Subresource
		}
		verb := e.Verb
		if verb == "watch" {
			verb = "list"
		}
		key := e.ObjectRef.APIGroup + "|" + res + "|" + verb
		// A 403 is the authorizer's refusal only when its decision says
		// so: an admission webhook's denial is a 403 too (the webhook
		// probes' dry runs, answered by a denial), after RBAC allowed it.
		if e.ResponseStatus != nil && e.ResponseStatus.Code == 403 && e.Annotations[authzDecision] != "allow" {
			refused[key] = true
			continue
		}
		used[key] = true
	}
	return used, refused, sc.Err()
}

// checkRefused fails t for every request of the ServiceAccount default/name
// the API server refused, even one the provider went on without (a plan-time
// check that quietly skipped its lookup): the role lacks that rule.
func checkRefused(t *testing.T, name string) {
	if auditLog == "" {
		return
	}
	_, refused, err := usedBy("system:serviceaccount:default:" + name)
	if err != nil {
		t.Errorf("RBAC audit: %v", err)
		return
	}
	var rules []string
	for k := range refused {
		p := strings.SplitN(k, "|", 3)
		rules = append(rules, fmt.Sprintf(`{apiGroups: [%q], resources: [%q], verbs: [%q]}`, p[0], p[1], p[2]))
	}
	sort.Strings(rules)
	if len(rules) > 0 {
		t.Errorf("the API server refused requests of %s (the audit log's 403s, whether or not the provider reported them): the role lacks\n  %s",
			name, strings.Join(rules, "\n  "))
	}
}

// logUnused logs, for the ServiceAccount default/name bound to roles, the
// group/resource/verb triples the roles grant that it never used.
func logUnused(t *testing.T, name string, roles []rbacv1.ClusterRole) {
	if auditLog == "" {
		return
	}
	checkRefused(t, name)
	used, _, err := usedBy("system:serviceaccount:default:" + name)
	if err != nil {
		return
	}
	var unused []string
	for _, r := range roles {
		for _, rule := range r.Rules {
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, v := range rule.Verbs {
						if v == "escalate" || v == "bind" {
							continue // checked by the authorizer, never a request verb
						}
						// A server-side apply that creates the object is a
						// patch request for which the authorizer also checks
						// create.
						if !used[g+"|"+res+"|"+v] && (v != "create" || !used[g+"|"+res+"|patch"]) {
							unused = append(unused, fmt.Sprintf("%s %s/%s", v, g, res))
						}
					}
				}
			}
		}
	}
	sort.Strings(unused)
	var usedList []string
	for k := range used {
		usedList = append(usedList, k)
	}
	sort.Strings(usedList)
	t.Logf("RBAC audit: %s made %s; granted but not used here: %s", name, strings.Join(usedList, ", "), strings.Join(unused, ", "))
}
