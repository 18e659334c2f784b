package examples_test

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
)

// The provider's own upgrade (issue #29, item 5): what the last release
// wrote keeps planning under this build. The release's provider, built from
// its commit, applies the release's own scenarios as a user of it did; this
// build then reads that state (upgrading it where a schema changed) and
// plans the release's configuration with `plan -detailed-exitcode`, which
// must exit 0, and destroys it. A change that breaks this must be undone or
// listed in the CHANGELOG with a state upgrader, and this test changed to
// expect exactly that change.
func TestAccUpgradeFromLastRelease(t *testing.T) {
	env := acctest.Env(t)
	rel := acctest.LastRelease(t)
	src := rel.Source(t)
	old := rel.Provider(t, src)
	for _, dir := range []string{"quickstart", "teams", "model-cache"} {
		t.Run(dir, func(t *testing.T) {
			w := acctest.NewWorkspace(t, env, filepath.Join(src, "examples", dir))
			w.UseProvider(old)
			out, err := w.Run("apply", "-auto-approve")
			if err != nil {
				t.Fatalf("%s's provider: apply of its %s: %v", rel.Tag, dir, err)
			}
			if !regexp.MustCompile(`Apply complete! Resources: [1-9][0-9]* added`).MatchString(out) {
				t.Fatalf("%s's provider: apply of its %s created nothing:\n%s", rel.Tag, dir, out)
			}
			w.UseProvider("") // this build
			if code, out := w.PlanExitCode(); code != 0 {
				t.Fatalf("this build's plan -detailed-exitcode of %s's %s (its state and configuration) exited %d, want 0:\n%s", rel.Tag, dir, code, out)
			}
		})
	}
}
