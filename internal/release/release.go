// Package release runs the release build (.goreleaser.yml) with a goreleaser
// built from its module, cached by version like testenv's binaries: for
// `make release-snapshot`, `make release` and the test that installs a
// snapshot the way users install the provider.
package release

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
)

// Goreleaser is the goreleaser the release is built with, not from the
// provider's go.mod but from tools/clis, beside the Pulumi CLI: both are
// built on the same cloud SDKs (AWS, Azure, Google Cloud), gRPC and
// OpenTelemetry, which tools/clis/go.mod holds at one version each, so a
// cold run compiles them once for both.
var Goreleaser = binaries.Spec{
	Name:      "goreleaser",
	Version:   "v2.15.1",
	Module:    "github.com/goreleaser/goreleaser/v2",
	Dir:       binaries.CLIs,
	Package:   "github.com/goreleaser/goreleaser/v2",
	LDFlags:   "-s -w",
	ColdBuild: "~5 min of CPU alone, less after the Pulumi CLI",
}

// Config is the release configuration, relative to the repository root.
const Config = ".goreleaser.yml"

// Project is goreleaser's project name: the archives' prefix.
const Project = "terraform-provider-aiplatform"

// EnsureGoreleaser returns the path of the cached goreleaser, building it first
// when missing (one builder at a time across processes).
func EnsureGoreleaser(ctx context.Context, log io.Writer) (string, error) {
	paths, err := binaries.Ensure(ctx, log, Goreleaser)
	if err != nil {
		return "", err
	}
	return paths[Goreleaser.Name], nil
}

var (
	targetsLine = regexp.MustCompile(`(?m)^(\s*targets:).*$`)
	distLine    = regexp.MustCompile(`(?m)^dist:.*$`)
)

// SnapshotConfig is the release configuration restricted to the given
// targets ("linux_amd64") in every build (the Terraform provider's and the
// Pulumi plugin's), writing into dist: the same archives, names, sums and
// manifest, for fewer platforms.
func SnapshotConfig(repo, dist string, targets ...string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(repo, Config))
	if err != nil {
		return nil, err
	}
	if len(targetsLine.FindAll(b, -1)) == 0 || len(distLine.FindAll(b, -1)) != 1 {
		return nil, fmt.Errorf("%s: want a `targets:` line per build and one `dist:` line to restrict the snapshot", Config)
	}
	list := "["
	for i, t := range targets {
		if i > 0 {
			list += ", "
		}
		list += t
	}
	b = targetsLine.ReplaceAll(b, []byte("${1} "+list+"]"))
	return distLine.ReplaceAll(b, []byte(fmt.Sprintf("dist: %q", dist))), nil
}

// HostTarget is goreleaser's name of the platform this runs on.
func HostTarget() string { return runtime.GOOS + "_" + runtime.GOARCH }

// Snapshot builds the release archives of the given targets (the host's when
// none) into dist with `goreleaser release --snapshot`: unsigned, unpublished,
// versioned <next patch>-snapshot.
func Snapshot(ctx context.Context, log io.Writer, repo, dist string, targets ...string) error {
	if len(targets) == 0 {
		targets = []string{HostTarget()}
	}
	bin, err := EnsureGoreleaser(ctx, log)
	if err != nil {
		return err
	}
	cfg, err := SnapshotConfig(repo, dist, targets...)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dist), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(dist), ".goreleaser-snapshot-*.yml")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(cfg); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return Run(ctx, log, bin, repo, "release", "--snapshot", "--clean", "--skip=sign", "--config", f.Name())
}

// Run runs goreleaser in the repository, its output to log.
func Run(ctx context.Context, log io.Writer, bin, repo string, args ...string) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = repo
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("goreleaser %v: %w", args, err)
	}
	return nil
}
