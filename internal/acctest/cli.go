package acctest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// Some scenarios run the real terraform (or tofu) CLI against the built
// provider, as a user does (dev_overrides, no registry): plugin-testing's
// state checks do not support for_each, and `plan -detailed-exitcode` is what
// GitOps runs.

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// providerBinary builds the provider once per test binary into bin/acctest.
func providerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		var outs []string
		outs, buildErr = BuildInRepo(buildLock, RepoBuild{Module: ".", Pkg: ".", Out: "bin/acctest/terraform-provider-aiplatform"})
		if buildErr == nil {
			binDir = filepath.Dir(outs[0])
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

// Workspace is a copy of an example directory with its own CLI
// configuration pointing at the built provider.
type Workspace struct {
	t          *testing.T
	dir        string
	cliConfig  string
	kubeconfig string
	cli        CLI
	// Env is added to terraform's environment (e.g. TF_LOG, TF_VAR_…).
	Env []string
}

// Dir is the workspace directory (terraform.tfstate lives there).
func (w *Workspace) Dir() string { return w.dir }

// SetKubeconfig points the workspace's kubeconfig variable elsewhere.
func (w *Workspace) SetKubeconfig(path string) { w.kubeconfig = path }

// NewWorkspace copies the *.tf files of src into a temp dir, to be run by
// Terraform (TF_ACC_TERRAFORM_PATH). The workspace is destroyed (terraform
// destroy) when the test ends.
func NewWorkspace(t *testing.T, env *testenv.Env, src string) *Workspace {
	t.Helper()
	return NewWorkspaceFor(t, env, src, Terraform(t))
}

// NewWorkspaceFor is NewWorkspace run by the given CLI (see ForEachCLI).
func NewWorkspaceFor(t *testing.T, env *testenv.Env, src string, cli CLI) *Workspace {
	t.Helper()
	bin := providerBinary(t)
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(src, "*.tf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no .tf files in %s", src)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// TF_CLI_CONFIG_FILE is read by both CLIs. The overrides name the
	// provider by its full addresses: `source = "aiplatform/aiplatform"`
	// means registry.terraform.io/aiplatform/aiplatform to Terraform and
	// registry.opentofu.org/aiplatform/aiplatform to OpenTofu (each CLI
	// reads a bare key the same way, and ignores the other's entry), so
	// either CLI can run the workspace (SetCLI).
	w := &Workspace{t: t, dir: dir, cliConfig: filepath.Join(dir, "terraformrc"), kubeconfig: env.Kubeconfig, cli: cli}
	w.UseProvider(bin)
	t.Cleanup(func() {
		if _, err := w.Run("destroy", "-auto-approve"); err != nil {
			t.Errorf("%s destroy: %v", w.cli.Name, err)
		}
	})
	return w
}

// UseProvider points the workspace's dev_overrides at the provider binary
// in dir (another build than this one's, e.g. a release's: Release.Provider);
// "" points them back at this build's.
func (w *Workspace) UseProvider(dir string) {
	w.t.Helper()
	if dir == "" {
		dir = providerBinary(w.t)
	}
	body := "provider_installation {\n  dev_overrides {\n"
	for _, host := range []string{terraformRegistry, openTofuRegistry} {
		body += fmt.Sprintf("    %q = %q\n", host+"/aiplatform/aiplatform", dir)
	}
	body += "  }\n  direct {}\n}\n"
	if err := os.WriteFile(w.cliConfig, []byte(body), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// CLI is the CLI that runs the workspace.
func (w *Workspace) CLI() CLI { return w.cli }

// SetCLI runs the workspace with another CLI from now on (the cleanup's
// destroy included), as a team switching from Terraform to OpenTofu does.
func (w *Workspace) SetCLI(cli CLI) { w.cli = cli }

// Run runs the workspace's CLI with its variables; the error carries the
// output. An exit code other than 0 is an *exec.ExitError.
func (w *Workspace) Run(args ...string) (string, error) {
	// Options go right after the command, before its positional arguments
	// (terraform import ADDR ID takes none after them).
	// `state` subcommands take no variables and no -input.
	full := []string{"-chdir=" + w.dir}
	if len(args) > 0 {
		full = append(full, args[0])
		args = args[1:]
	}
	if full[1] == "state" && len(args) > 0 {
		full = append(full, args[0], "-no-color")
		args = args[1:]
	} else {
		full = append(full, "-input=false", "-no-color", "-var", "kubeconfig="+w.kubeconfig)
	}
	full = append(full, args...)
	cmd := exec.Command(w.cli.Path, full...)
	cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+w.cliConfig, "TF_IN_AUTOMATION=1")
	cmd.Env = append(cmd.Env, w.Env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %v: %w\n%s", w.cli.Name, args, err, out.String())
	}
	return out.String(), nil
}

// PlanExitCode runs `plan -detailed-exitcode`: 0 no changes, 2 changes.
func (w *Workspace) PlanExitCode() (int, string) {
	out, err := w.Run("plan", "-detailed-exitcode")
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return 0, out
}

// Outputs reads the root module's outputs from the workspace's state file
// (`terraform output` takes no -var, which Run passes), by name.
func (w *Workspace) Outputs() map[string]any {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(w.dir, "terraform.tfstate"))
	if err != nil {
		w.t.Fatal(err)
	}
	var state struct {
		Outputs map[string]struct {
			Value any `json:"value"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(b, &state); err != nil {
		w.t.Fatal(err)
	}
	out := map[string]any{}
	for k, v := range state.Outputs {
		out[k] = v.Value
	}
	return out
}
