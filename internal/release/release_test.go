package release

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
)

func repo(t *testing.T) string {
	t.Helper()
	r, err := binaries.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The registry assumes protocol 5 unless the manifest says otherwise, and
// this provider serves 6 only.
func TestRegistryManifest(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repo(t), "terraform-registry-manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Version  int `json:"version"`
		Metadata struct {
			ProtocolVersions []string `json:"protocol_versions"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Version != 1 || len(m.Metadata.ProtocolVersions) != 1 || m.Metadata.ProtocolVersions[0] != "6.0" {
		t.Fatalf("manifest = %+v, want version 1 and protocol_versions [\"6.0\"]", m)
	}
}

func TestSnapshotConfig(t *testing.T) {
	full, err := os.ReadFile(filepath.Join(repo(t), Config))
	if err != nil {
		t.Fatal(err)
	}
	// The registry's usual platforms are all released.
	for _, target := range []string{"darwin_amd64", "darwin_arm64", "linux_amd64", "linux_arm64", "windows_amd64"} {
		if !bytes.Contains(full, []byte(target)) {
			t.Errorf("%s does not build %s", Config, target)
		}
	}
	got, err := SnapshotConfig(repo(t), "/tmp/x y", "linux_arm64")
	if err != nil {
		t.Fatal(err)
	}
	if len(regexp.MustCompile(`(?m)^\s*targets: \[linux_arm64\]$`).FindAll(got, -1)) != 2 || !bytes.Contains(got, []byte(`dist: "/tmp/x y"`)) {
		t.Fatalf("snapshot config:\n%s", got)
	}
	if bytes.Contains(got, []byte("darwin_amd64")) {
		t.Fatal("the snapshot config still builds other targets")
	}
}

// The way users get the provider: the release archive (built here with the
// release configuration, for this platform) in a filesystem mirror, and
// `init` + `plan` with no dev_overrides, under Terraform and under OpenTofu
// (acctest.CLIs): a configuration that needs no cluster and the stamped
// version in the User-Agent (no-cluster), then the getting-started guide's
// steps as written against the package's cluster (getting-started).
func TestInstallFromFilesystemMirror(t *testing.T) {
	env := acctest.Env(t) // skips without TF_ACC: builds with goreleaser, runs the CLIs on a cluster
	snap := snapshot(t)
	checkArchive(t, snap.archive, snap.version)
	checkSums(t, filepath.Join(snap.dist, Project+"_"+snap.version+"_SHA256SUMS"), snap.archive, snap.version)

	acctest.ForEachCLI(t, func(t *testing.T, cli acctest.CLI) {
		t.Run("no-cluster", func(t *testing.T) { noCluster(t, cli, snap) })
		t.Run("getting-started", func(t *testing.T) { gettingStarted(t, env, cli, snap) })
	})
}

// noCluster: init from the mirror and plan a configuration that needs no
// cluster with an empty provider block; then the User-Agent.
func noCluster(t *testing.T, cli acctest.CLI, snap release) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	m := newMirror(t, cli, snap)
	writeFile(t, filepath.Join(m.work, "main.tf"), fmt.Sprintf(`terraform {
  required_providers {
    aiplatform = {
      source  = "aiplatform/aiplatform"
      version = %q
    }
  }
}

provider "aiplatform" {}

data "aiplatform_inference_sizing" "llama_70b" {
  params_billion = 70
  dtype          = "bf16"
  gpu_memory     = "80G"
  gpus_per_node  = 8
}

output "min_gpus" {
  value = data.aiplatform_inference_sizing.llama_70b.min_gpus
}
`, snap.version))
	m.init(ctx)
	if out := m.must(ctx, "plan"); !regexp.MustCompile(`min_gpus\s*=\s*2\b`).MatchString(out) {
		t.Fatalf("plan does not show min_gpus = 2:\n%s", out)
	}

	// The same installed binary reports its version in the User-Agent.
	api := newRecordingAPIServer(t)
	writeFile(t, filepath.Join(m.work, "main.tf"), fmt.Sprintf(`terraform {
  required_providers {
    aiplatform = {
      source  = "aiplatform/aiplatform"
      version = %q
    }
  }
}

provider "aiplatform" {
  host     = %q
  token    = "t"
  insecure = true
}

data "aiplatform_gpu_capacity" "all" {}
`, snap.version, api.URL))
	m.must(ctx, "plan")
	agents := api.agents()
	if len(agents) == 0 {
		t.Fatal("the provider sent no request to the API server")
	}
	for _, ua := range agents {
		if !strings.HasPrefix(ua, "terraform-provider-aiplatform/"+snap.version+" Terraform/") {
			t.Fatalf("User-Agent %q does not carry the stamped version %s", ua, snap.version)
		}
	}
	t.Logf("%s: User-Agent %q", cli.Name, agents[0])
}

// release is the snapshot the test installs.
type release struct {
	dist, archive, version string
}

// snapshot builds the release archives for this platform with the release
// configuration (`make release-snapshot`).
func snapshot(t *testing.T) release {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dist := filepath.Join(t.TempDir(), "dist")
	var log bytes.Buffer
	start := time.Now()
	if err := Snapshot(ctx, &log, repo(t), dist); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	zips, _ := filepath.Glob(filepath.Join(dist, Project+"_*_"+HostTarget()+".zip"))
	if len(zips) != 1 {
		t.Fatalf("want one archive for %s in %s, got %v", HostTarget(), dist, zips)
	}
	version := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(zips[0]), Project+"_"), "_"+HostTarget()+".zip")
	checkPulumiArchive(t, filepath.Join(dist, "pulumi-resource-aiplatform-v"+version+"-"+runtime.GOOS+"-"+runtime.GOARCH+".tar.gz"))
	t.Logf("snapshot %s built in %s", version, time.Since(start).Round(time.Second))
	return release{dist: dist, archive: zips[0], version: version}
}

// mirror is a filesystem mirror holding the release's zip, a CLI
// configuration that installs the provider from it only, and an empty
// working directory, for one CLI.
type mirror struct {
	t         *testing.T
	cli       acctest.CLI
	version   string
	rc, work  string
	extraArgs []string
}

// newMirror lays the mirror out as the getting-started guide says: the zip
// unchanged in HOST/aiplatform/aiplatform/, HOST being the registry the CLI
// puts in front of a bare source address (registry.terraform.io for
// Terraform, registry.opentofu.org for OpenTofu), named in the CLI
// configuration's filesystem_mirror and excluded from direct installation.
func newMirror(t *testing.T, cli acctest.CLI, snap release) *mirror {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "mirror")
	addr := cli.Registry + "/aiplatform/aiplatform"
	copyFile(t, snap.archive, filepath.Join(root, filepath.FromSlash(addr), filepath.Base(snap.archive)))
	rc := filepath.Join(dir, "terraformrc")
	writeFile(t, rc, fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %q
    include = [%q]
  }
  direct {
    exclude = [%q]
  }
}
`, root, addr, addr))
	return &mirror{t: t, cli: cli, version: snap.version, rc: rc, work: filepath.Join(dir, "work")}
}

// run runs the CLI in the working directory with the mirror's CLI
// configuration; code is the exit code.
func (m *mirror) run(ctx context.Context, args ...string) (out string, code int) {
	m.t.Helper()
	full := []string{"-chdir=" + m.work, args[0], "-input=false", "-no-color"}
	if args[0] != "init" {
		full = append(full, m.extraArgs...)
	}
	cmd := exec.CommandContext(ctx, m.cli.Path, append(full, args[1:]...)...)
	cmd.Env = terraformEnv(m.rc)
	b, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(b), exit.ExitCode()
	case err != nil:
		m.t.Fatalf("%s %v: %v\n%s", m.cli.Name, args, err, b)
	}
	return string(b), 0
}

// must runs the CLI and fails the test unless it exits 0.
func (m *mirror) must(ctx context.Context, args ...string) string {
	m.t.Helper()
	out, code := m.run(ctx, args...)
	if code != 0 {
		m.t.Fatalf("%s %v exited %d:\n%s", m.cli.Name, args, code, out)
	}
	return out
}

// init installs the provider from the mirror, the version asked for.
func (m *mirror) init(ctx context.Context) {
	m.t.Helper()
	out := m.must(ctx, "init")
	if !strings.Contains(out, "Installed aiplatform/aiplatform v"+m.version) {
		m.t.Fatalf("%s init did not install v%s from the mirror:\n%s", m.cli.Name, m.version, out)
	}
	m.t.Logf("%s init: %s", m.cli.Name, installedLine.FindString(out))
}

var installedLine = regexp.MustCompile(`(?m)^- Installed aiplatform/aiplatform .*$`)

// terraformEnv is the environment without anything that could install the
// provider another way (dev_overrides in ~/.terraformrc, a plugin cache).
func terraformEnv(cli string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "TF_") || strings.HasPrefix(k, "KUBE") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "TF_CLI_CONFIG_FILE="+cli, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
}

// checkArchive: the registry's archive holds the binary alone, named with
// its version.
func checkArchive(t *testing.T, archive, version string) {
	t.Helper()
	z, err := zip.OpenReader(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	want := Project + "_v" + version
	if strings.HasPrefix(HostTarget(), "windows_") {
		want += ".exe"
	}
	if len(z.File) != 1 || z.File[0].Name != want {
		var names []string
		for _, f := range z.File {
			names = append(names, f.Name)
		}
		t.Fatalf("archive holds %v, want only %s", names, want)
	}
}

// checkSums: SHA256SUMS lists the archive with its digest, and the manifest
// under the registry's name.
func checkSums(t *testing.T, sumsFile, archive, version string) {
	t.Helper()
	f, err := os.Open(sumsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	for s := bufio.NewScanner(f); s.Scan(); {
		if sum, name, ok := strings.Cut(s.Text(), "  "); ok {
			sums[name] = sum
		}
	}
	if got, want := sums[filepath.Base(archive)], digest(t, archive); got != want {
		t.Fatalf("%s: %s listed as %q, its digest is %s", sumsFile, filepath.Base(archive), got, want)
	}
	manifest := Project + "_" + version + "_manifest.json"
	if got, want := sums[manifest], digest(t, filepath.Join(repo(t), "terraform-registry-manifest.json")); got != want {
		t.Fatalf("%s: %s listed as %q, want %s (sums: %v)", sumsFile, manifest, got, want, sums)
	}
}

func digest(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(b))
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// recordingAPIServer answers node and pod listings (empty) on loopback and
// records the User-Agent of every request.
type recordingAPIServer struct {
	*httptest.Server
	mu sync.Mutex
	ua []string
}

func newRecordingAPIServer(t *testing.T) *recordingAPIServer {
	s := &recordingAPIServer{}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.ua = append(s.ua, r.UserAgent())
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/nodes"):
			fmt.Fprint(w, `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[]}`)
		case strings.HasSuffix(r.URL.Path, "/pods"):
			fmt.Fprint(w, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *recordingAPIServer) agents() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ua...)
}

// checkPulumiArchive checks the Pulumi plugin's archive beside the zips: the
// plugin binary alone at its root, as `pulumi plugin install resource
// aiplatform <version> --file <archive>` takes it.
func checkPulumiArchive(t *testing.T, archive string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatalf("the Pulumi plugin's archive: %v", err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	if want := "pulumi-resource-aiplatform"; len(names) != 1 || names[0] != want {
		t.Fatalf("%s holds %v, want [%s]", filepath.Base(archive), names, want)
	}
}
