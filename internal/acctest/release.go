package acctest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
)

// ReleaseSchemaDir holds, relative to the repository root, one file per
// released version (v0.1.0.json), written when the release is tagged: the
// release's tag, its commit and the schema of every resource type
// (internal/provider's TestSchemaAgainstRelease holds HEAD against it).
const ReleaseSchemaDir = "internal/provider/testdata/release-schema"

// Release is a released version of the provider.
type Release struct {
	Tag    string `json:"release"` // "v0.1.0"
	Commit string `json:"commit"`  // the commit the tag names
	File   string `json:"-"`       // its file in ReleaseSchemaDir
}

// LastRelease is the newest release in ReleaseSchemaDir; the test fails when
// there is none (the checks against it cannot run).
func LastRelease(t *testing.T) Release {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, filepath.FromSlash(ReleaseSchemaDir))
	files, err := filepath.Glob(filepath.Join(dir, "v*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no release in %s (%v): the checks against the last release cannot run", dir, err)
	}
	version := func(f string) *semver.Version {
		v, err := semver.NewVersion(strings.TrimSuffix(filepath.Base(f), ".json"))
		if err != nil {
			t.Fatalf("%s: not named after a release tag: %v", f, err)
		}
		return v
	}
	sort.Slice(files, func(i, j int) bool { return version(files[i]).LessThan(version(files[j])) })
	file := files[len(files)-1]
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rel := Release{File: file}
	if err := json.Unmarshal(data, &rel); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if rel.Tag == "" {
		t.Fatalf("%s names no release", file)
	}
	return rel
}

// Source extracts the release's tree (git archive of its commit) into a
// temporary directory and returns it. The commit must be in this clone's
// history (a shallow clone lacks it: the test fails saying so).
func (r Release) Source(t *testing.T) string {
	t.Helper()
	if r.Commit == "" {
		t.Fatalf("%s records no commit for %s", r.File, r.Tag)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", root, "cat-file", "-e", r.Commit+"^{commit}").CombinedOutput(); err != nil {
		t.Fatalf("release %s's commit %s is not in this clone (a shallow clone? fetch the full history): %v %s", r.Tag, r.Commit, err, out)
	}
	dir := t.TempDir()
	tarball := filepath.Join(t.TempDir(), "release.tar")
	if out, err := exec.Command("git", "-C", root, "archive", "--format=tar", "-o", tarball, r.Commit).CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", r.Commit, err, out)
	}
	if out, err := exec.Command("tar", "-x", "-f", tarball, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("extracting release %s: %v\n%s", r.Tag, err, out)
	}
	return dir
}

// Provider returns the directory of the release's provider binary, built
// from src (its Source) on first use and cached outside the repository by
// commit, as testenv caches its binaries; it reports the release's version.
func (r Release) Provider(t *testing.T, src string) string {
	t.Helper()
	cache, err := binaries.Dir()
	if err != nil {
		t.Fatal(err)
	}
	short := r.Commit
	if len(short) > 12 {
		short = short[:12]
	}
	dir := filepath.Join(cache, "terraform-provider-aiplatform-"+r.Tag+"-"+short)
	bin := filepath.Join(dir, "terraform-provider-aiplatform")
	if _, err := os.Stat(bin); err == nil {
		return dir
	}
	release, err := process.MachineLock(context.Background(), "release-provider-"+short, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, err := os.Stat(bin); err == nil {
		return dir
	}
	t.Logf("building the provider of release %s (commit %s) into %s", r.Tag, short, dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := bin + ".tmp"
	cmd := exec.Command("go", "build", "-ldflags", "-X main.version="+strings.TrimPrefix(r.Tag, "v"), "-o", tmp, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-trimpath -mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building release %s's provider: %v\n%s", r.Tag, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(fmt.Errorf("placing release %s's provider: %w", r.Tag, err))
	}
	return dir
}
