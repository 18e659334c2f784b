package binaries

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// The CLI's versions are those tools/clis/go.mod builds, and those the
// bridge (pulumi/go.mod) is built against: the CLI speaks the SDK's
// protocol of the provider it runs.
func TestPulumiVersionsPinned(t *testing.T) {
	repo, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, gomod := range []string{"tools/clis/go.mod", "pulumi/go.mod"} {
		b, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(gomod)))
		if err != nil {
			t.Fatal(err)
		}
		for module, want := range map[string]string{PulumiModule: PulumiVersion, PulumiYAMLModule: PulumiYAMLVersion} {
			m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(module) + `\s+(\S+)`).FindSubmatch(b)
			if m == nil || string(m[1]) != want {
				t.Errorf("%s requires %s %s, want %s (binaries.PulumiCLI)", gomod, module, m, want)
			}
		}
	}
}
