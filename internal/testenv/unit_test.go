package testenv

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/release"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/nodes"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
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

// A binary built in one of the repository's shared modules (Spec.Dir) is
// cached under its Version: that module's go.mod must require the
// controller's module at exactly that version and list the package as a
// tool, or the cache would hold one version under another's name.
func TestSharedModuleVersions(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	shared := 0
	for _, s := range append(podrunner.AllSpecs(), nodes.KwokSpec, binaries.PulumiCLI, binaries.PulumiCLI.BuildsAlso[0], release.Goreleaser) {
		if s.Dir == "" {
			continue
		}
		shared++
		path := filepath.Join(root, filepath.FromSlash(s.Dir), "go.mod")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := modfile.Parse(path, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(f.Require, func(r *modfile.Require) bool { return r.Mod.Path == s.Module })
		if i < 0 || f.Require[i].Mod.Version != s.Version {
			t.Errorf("%s: %s/go.mod does not require %s %s", s.Name, s.Dir, s.Module, s.Version)
		}
		if !slices.ContainsFunc(f.Tool, func(tl *modfile.Tool) bool { return tl.Path == s.Target() }) {
			t.Errorf("%s: %s/go.mod has no tool %s", s.Name, s.Dir, s.Target())
		}
	}
	if shared < 7 {
		t.Errorf("%d binaries in shared modules, want the 7 of tools/k8s-v0.36 and tools/k8s-v0.35", shared)
	}
}
