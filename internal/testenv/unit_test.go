package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The cached binaries are named by the version constants; tools/go.mod decides
// what is actually built. They must agree.
func TestToolsVersions(t *testing.T) {
	repo, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(repo, "tools", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for mod, want := range map[string]string{
		"k8s.io/kubernetes":         KubernetesVersion,
		"go.etcd.io/etcd/server/v3": EtcdVersion,
	} {
		if !strings.Contains(string(data), "\t"+mod+" "+want+"\n") {
			t.Errorf("tools/go.mod does not require %s %s", mod, want)
		}
	}
}
