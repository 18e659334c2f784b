package pulumi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
)

var (
	binOnce sync.Once
	bins    pulumiBins
	binErr  error
)

// pulumiBins are two directories: what a Pulumi user has on PATH, the CLI
// and its YAML language host (built once, cached by version); and the
// provider plugin pulumi-resource-aiplatform, built from pulumi/ for this
// test binary. Pulumi finds a plugin on PATH before its plugin cache, so no
// `pulumi plugin install` (and no network) is needed with Plugin on PATH.
type pulumiBins struct{ CLI, Plugin string }

func pulumiBin(t *testing.T) pulumiBins {
	t.Helper()
	binOnce.Do(func() { bins, binErr = buildPulumiBins() })
	if binErr != nil {
		t.Fatal(binErr)
	}
	return bins
}

func buildPulumiBins() (pulumiBins, error) {
	ctx := context.Background()
	repo, err := testenv.RepoRoot()
	if err != nil {
		return pulumiBins{}, err
	}
	cli, err := binaries.Ensure(ctx, os.Stderr, binaries.PulumiCLI)
	if err != nil {
		return pulumiBins{}, err
	}
	// Its own lock: the bridge compiles while other packages build the
	// Terraform provider.
	outs, err := acctest.BuildInRepo("pulumi-build", acctest.RepoBuild{Module: "pulumi", Pkg: "./cmd/pulumi-resource-aiplatform", Out: "bin/pulumi/plugin/pulumi-resource-aiplatform"})
	if err != nil {
		return pulumiBins{}, err
	}
	b := pulumiBins{CLI: filepath.Join(repo, "bin", "pulumi", "cli"), Plugin: filepath.Dir(outs[0])}
	if err := os.MkdirAll(b.CLI, 0o755); err != nil {
		return b, err
	}
	for name, target := range map[string]string{"pulumi": cli[binaries.PulumiCLI.Name], "pulumi-language-yaml": cli[binaries.PulumiCLI.BuildsAlso[0].Name]} {
		link := filepath.Join(b.CLI, name)
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return b, err
		}
	}
	return b, nil
}

// stack is a copy of a Pulumi program of examples/pulumi with a stack of
// its own: state in a local file backend, its own PULUMI_HOME, the cluster's
// kubeconfig as aiplatform:configPath. Nothing reaches the network.
type stack struct {
	bin string // pulumiBin
	dir string
	env []string
}

func newStack(t *testing.T, env *testenv.Env, program string) *stack {
	t.Helper()
	return newStackOn(t, env, program, pulumiBin(t).Plugin)
}

// newStackOn is newStack of the program in directory src with the
// directories path before the CLI's on PATH (none: the provider plugin must
// be installed in the stack's PULUMI_HOME).
func newStackOn(t *testing.T, env *testenv.Env, src string, path ...string) *stack {
	t.Helper()
	bin := pulumiBin(t).CLI
	dir := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	state, home := t.TempDir(), t.TempDir()
	s := &stack{bin: bin, dir: dir, env: append(os.Environ(),
		"PATH="+strings.Join(append(path, bin, os.Getenv("PATH")), string(os.PathListSeparator)),
		"PULUMI_HOME="+home,
		"PULUMI_BACKEND_URL=file://"+state,
		"PULUMI_CONFIG_PASSPHRASE=",
		"PULUMI_SKIP_UPDATE_CHECK=true",
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true",
		"PULUMI_DISABLE_REGISTRY_RESOLVE=true",
		"PULUMI_SKIP_CONFIRMATIONS=true",
		"PULUMI_DIY_BACKEND_NO_LEGACY_WARNING=true",
		"NO_COLOR=1",
	)}
	s.must(t, "stack", "init", "test")
	s.must(t, "config", "set", "aiplatform:configPath", env.Kubeconfig)
	return s
}

// run runs pulumi in the program's directory; the error carries the output.
func (s *stack) run(args ...string) (string, error) {
	args = append(args, "--non-interactive", "--color", "never")
	cmd := exec.Command(filepath.Join(s.bin, "pulumi"), args...)
	cmd.Dir, cmd.Env = s.dir, s.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("pulumi %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

func (s *stack) must(t *testing.T, args ...string) string {
	t.Helper()
	out, err := s.run(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fails runs pulumi and returns its output, failing the test if it exits 0.
func (s *stack) fails(t *testing.T, args ...string) string {
	t.Helper()
	out, err := s.run(args...)
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("pulumi %s: want a non-zero exit, got %v:\n%s", strings.Join(args, " "), err, out)
	}
	return out
}
