package acctest

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
)

// TestOpenTofu builds tofu from its source module (or finds it in the
// binary cache) and checks that it is the release build it claims to be:
// `make binaries` runs it with -v, so the build's progress shows before
// go test holds the output of the packages that use tofu.
func TestOpenTofu(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("builds tofu (minutes when cold): set TF_ACC=1 (make binaries does)")
	}
	cli := OpenTofu(t)
	out, err := exec.Command(cli.Path, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", cli.Path, err, out)
	}
	// A line of its own: warnings about the CLI configuration may come first.
	want := "OpenTofu " + binaries.OpenTofuVersion
	if os.Getenv("TF_ACC_TOFU_PATH") == "" && !slices.Contains(strings.Split(string(out), "\n"), want) {
		t.Fatalf("tofu version printed %q, want a line %q (a release build, not -dev)", out, want)
	}
	t.Logf("%s: %s", cli.Path, want)
}

// CLIs reads TF_ACC_CLIS: terraform alone needs no tofu.
func TestCLIsTerraformOnly(t *testing.T) {
	t.Setenv("TF_ACC_CLIS", "terraform")
	t.Setenv("TF_ACC_TERRAFORM_PATH", "/usr/bin/terraform-under-test")
	clis := CLIs(t)
	if len(clis) != 1 || clis[0].Name != "terraform" || clis[0].Path != "/usr/bin/terraform-under-test" || clis[0].Registry != "registry.terraform.io" {
		t.Fatalf("CLIs() = %+v, want only terraform from TF_ACC_TERRAFORM_PATH", clis)
	}
}
