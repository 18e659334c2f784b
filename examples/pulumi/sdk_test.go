package pulumi_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// The generated Go SDK (sdk/, a module of its own) compiles and vets, and so
// does the Go quickstart that uses it (examples/pulumi/quickstart-go, whose
// go.mod points at sdk/). The module proxy serves no Go language host, so
// the program is compiled, not run; the YAML programs run.
func TestAccGoSDKAndProgramCompile(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("compiles the Go SDK (~2 min cold): set TF_ACC=1 (make test does)")
	}
	repo, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"sdk", "examples/pulumi/quickstart-go"} {
		cmd := exec.Command("go", "vet", "./...")
		cmd.Dir = filepath.Join(repo, dir)
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly "+os.Getenv("GOFLAGS"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go vet ./... in %s: %v\n%s", dir, err, out)
		}
	}
}
