package pulumi_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// The generated Go SDK (sdk/, a module of its own) compiles, every package
// of it, and the Go quickstart that uses it (examples/pulumi/quickstart-go,
// whose go.mod points at sdk/) compiles and vets. Both in the program's
// module: the SDK's 9 MB package compiles once (built as its own main
// module too, it would compile again, its paths differing under -trimpath).
// The module proxy serves no Go language host, so the program is compiled,
// not run; the YAML programs run.
func TestAccGoSDKAndProgramCompile(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("compiles the Go SDK (~1 min cold): set TF_ACC=1 (make test does)")
	}
	repo, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"build", "-o", os.DevNull, "github.com/aiplatform/terraform-provider-aiplatform/sdk/go/...", "."},
		{"vet", "."},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = filepath.Join(repo, "examples", "pulumi", "quickstart-go")
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly "+os.Getenv("GOFLAGS"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go %v in examples/pulumi/quickstart-go: %v\n%s", args, err, out)
		}
	}
}
