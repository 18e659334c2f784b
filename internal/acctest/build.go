package acctest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
)

// buildLock is the machine lock the provider's builds into bin/ take
// (providerBinary, UseSourceProviders).
const buildLock = "acctest-build"

// RepoBuild is one `go build` a test makes into the repository's bin/
// (git-ignored, overwritten by each run, rather than a temp dir no test
// could remove when all are done).
type RepoBuild struct {
	Module string // directory of the Go module, relative to the repository
	Pkg    string // package to build, relative to Module ("." or "./cmd/…")
	Out    string // output file, relative to the repository
}

// BuildInRepo runs builds under the machine lock named lock and returns the
// absolute path of each output. Test packages run at once (go test -p 2)
// take turns at a lock, and go build leaves a binary with the same build ID
// as it is, so a binary another package is running is not rewritten.
func BuildInRepo(lock string, builds ...RepoBuild) ([]string, error) {
	repo, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	release, err := process.MachineLock(context.Background(), lock, nil)
	if err != nil {
		return nil, err
	}
	defer release()
	outs := make([]string, len(builds))
	for i, b := range builds {
		outs[i] = filepath.Join(repo, b.Out)
		cmd := exec.Command("go", "build", "-o", outs[i], b.Pkg)
		cmd.Dir = filepath.Join(repo, b.Module)
		// Each module builds as its own main module, never a workspace's.
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building %s of %s: %v\n%s", b.Pkg, filepath.Join(repo, b.Module), err, out)
		}
	}
	return outs, nil
}
