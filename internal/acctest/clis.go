package acctest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
)

// CLI is a command-line tool that runs the scenarios: Terraform or OpenTofu.
// Both read the same configuration and CLI configuration; they differ in the
// registry a bare source address ("aiplatform/aiplatform") means.
type CLI struct {
	Name string // "terraform" or "tofu": the subtest's name
	Path string
	// Registry is the host the CLI puts in front of a bare source address,
	// which its dev_overrides entry has to name.
	Registry string
}

const (
	terraformRegistry = "registry.terraform.io"
	openTofuRegistry  = "registry.opentofu.org"
)

// terraformAtStart is TF_ACC_TERRAFORM_PATH as the test binary got it,
// before useOpenTofu pointed it at tofu.
var terraformAtStart = os.Getenv("TF_ACC_TERRAFORM_PATH")

// Terraform is the CLI that terraform-plugin-testing runs too:
// TF_ACC_TERRAFORM_PATH.
func Terraform(t *testing.T) CLI {
	t.Helper()
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if os.Getenv("TF_ACC_OPENTOFU") != "" {
		tf = terraformAtStart
	}
	if tf == "" {
		t.Fatal("TF_ACC_TERRAFORM_PATH is not set")
	}
	return CLI{Name: "terraform", Path: tf, Registry: terraformRegistry}
}

var (
	tofuOnce sync.Once
	tofuPath string
	tofuErr  error
)

// OpenTofu is the tofu CLI: TF_ACC_TOFU_PATH when set, else tofu built from
// its source module (binaries.OpenTofu) into testenv's binary cache on first
// use, as the controllers are.
func OpenTofu(t *testing.T) CLI {
	t.Helper()
	tofuOnce.Do(func() {
		if p := os.Getenv("TF_ACC_TOFU_PATH"); p != "" {
			tofuPath, tofuErr = filepath.Abs(p)
			return
		}
		var bins binaries.Paths
		bins, tofuErr = binaries.Ensure(context.Background(), os.Stderr, binaries.OpenTofu)
		tofuPath = bins[binaries.OpenTofu.Name]
	})
	if tofuErr != nil {
		t.Fatal(tofuErr)
	}
	return CLI{Name: "tofu", Path: tofuPath, Registry: openTofuRegistry}
}

// CLIs are the CLIs the scenarios run under: Terraform and OpenTofu, or the
// ones TF_ACC_CLIS names (comma-separated, e.g. "terraform" to skip tofu).
func CLIs(t *testing.T) []CLI {
	t.Helper()
	names := os.Getenv("TF_ACC_CLIS")
	if names == "" {
		names = "terraform,tofu"
	}
	var clis []CLI
	for _, n := range strings.Split(names, ",") {
		switch strings.TrimSpace(n) {
		case "terraform":
			clis = append(clis, Terraform(t))
		case "tofu", "opentofu":
			clis = append(clis, OpenTofu(t))
		case "":
		default:
			t.Fatalf("TF_ACC_CLIS: unknown CLI %q (want terraform and/or tofu)", n)
		}
	}
	if len(clis) == 0 {
		t.Fatal("TF_ACC_CLIS names no CLI")
	}
	return clis
}

// ForEachCLI runs f as one subtest per CLI, named after it ("terraform",
// "tofu"), one after the other: the scenarios share the package's cluster.
func ForEachCLI(t *testing.T, f func(t *testing.T, cli CLI)) {
	t.Helper()
	for _, cli := range CLIs(t) {
		t.Run(cli.Name, func(t *testing.T) { f(t, cli) })
	}
}

// useOpenTofu makes terraform-plugin-testing run tofu (TF_ACC_OPENTOFU=1):
// TF_ACC_TERRAFORM_PATH is tofu, and the in-process provider is served
// under registry.opentofu.org, the host tofu gives a bare source address
// (under registry.terraform.io, tofu's init fails with "Inconsistent
// dependency lock file": the required provider is not among the reattached
// ones).
func useOpenTofu(t *testing.T) {
	t.Helper()
	cli := OpenTofu(t)
	t.Setenv("TF_ACC_TERRAFORM_PATH", cli.Path)
	t.Setenv("TF_ACC_PROVIDER_HOST", cli.Registry)
}
