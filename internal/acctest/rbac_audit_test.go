package acctest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A 403 the authorizer gave (decision forbid) is a refused request; a 403
// an admission webhook gave after RBAC allowed the request (a webhook
// probe's dry run denied by the webhook) is a used one.
func TestUsedByTellsRBACFromAdmission(t *testing.T) {
	old := auditLog
	t.Cleanup(func() { auditLog = old })
	auditLog = filepath.Join(t.TempDir(), "audit.log")
	const user = "system:serviceaccount:default:terraform"
	lines := []string{
		`{"stage":"ResponseComplete","user":{"username":"` + user + `"},"verb":"create","objectRef":{"resource":"pods"},"responseStatus":{"code":403},"annotations":{"authorization.k8s.io/decision":"forbid"}}`,
		`{"stage":"ResponseComplete","user":{"username":"` + user + `"},"verb":"create","objectRef":{"apiGroup":"leaderworkerset.x-k8s.io","resource":"leaderworkersets"},"responseStatus":{"code":403},"annotations":{"authorization.k8s.io/decision":"allow"}}`,
		`{"stage":"ResponseComplete","user":{"username":"` + user + `"},"verb":"list","objectRef":{"resource":"namespaces"},"responseStatus":{"code":403}}`,
	}
	if err := os.WriteFile(auditLog, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	used, refused, err := usedBy(user)
	if err != nil {
		t.Fatal(err)
	}
	if !refused["|pods|create"] || !refused["|namespaces|list"] || len(refused) != 2 {
		t.Errorf("refused %v, want the forbidden pods create and the undecided namespaces list", refused)
	}
	if !used["leaderworkerset.x-k8s.io|leaderworkersets|create"] || len(used) != 1 {
		t.Errorf("used %v, want the create a webhook denied after RBAC allowed it", used)
	}
}
