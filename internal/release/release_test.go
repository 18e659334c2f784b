package release

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

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
	if !regexp.MustCompile(`(?m)^\s*targets: \[linux_arm64\]$`).Match(got) || !bytes.Contains(got, []byte(`dist: "/tmp/x y"`)) {
		t.Fatalf("snapshot config:\n%s", got)
	}
	if bytes.Contains(got, []byte("darwin_amd64")) {
		t.Fatal("the snapshot config still builds other targets")
	}
}

// The way users get the provider: the release archive (built here with the
// release configuration, for this platform) in a filesystem mirror, and
// `terraform init` + `terraform plan` with no dev_overrides, for a
// configuration that needs no cluster. Then the stamped version, in the
// User-Agent of the provider's requests to an API server.
func TestInstallFromFilesystemMirror(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("builds the release archive with goreleaser and runs terraform: set TF_ACC=1 (make test does)")
	}
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tf == "" {
		t.Fatal("TF_ACC_TERRAFORM_PATH is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dist := filepath.Join(t.TempDir(), "dist")
	var log bytes.Buffer
	start := time.Now()
	if err := Snapshot(ctx, &log, repo(t), dist); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Logf("snapshot built in %s", time.Since(start).Round(time.Second))

	zips, _ := filepath.Glob(filepath.Join(dist, Project+"_*_"+HostTarget()+".zip"))
	if len(zips) != 1 {
		t.Fatalf("want one archive for %s in %s, got %v", HostTarget(), dist, zips)
	}
	archive := zips[0]
	version := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(archive), Project+"_"), "_"+HostTarget()+".zip")
	checkArchive(t, archive, version)
	checkSums(t, filepath.Join(dist, Project+"_"+version+"_SHA256SUMS"), archive, version)

	// The mirror's packed layout: HOSTNAME/NAMESPACE/TYPE/<the registry's zip>.
	dir := t.TempDir()
	mirror := filepath.Join(dir, "mirror")
	pkg := filepath.Join(mirror, "registry.terraform.io", "aiplatform", "aiplatform")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, archive, filepath.Join(pkg, filepath.Base(archive)))
	cli := filepath.Join(dir, "terraformrc")
	writeFile(t, cli, fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %q
    include = ["registry.terraform.io/aiplatform/aiplatform"]
  }
}
`, mirror))
	work := filepath.Join(dir, "work")
	writeFile(t, filepath.Join(work, "main.tf"), fmt.Sprintf(`terraform {
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
`, version))
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, tf, append([]string{"-chdir=" + work}, args...)...)
		cmd.Env = terraformEnv(cli)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("terraform %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := run("init", "-input=false", "-no-color"); !strings.Contains(out, "Installed aiplatform/aiplatform v"+version) {
		t.Fatalf("terraform init did not install v%s from the mirror:\n%s", version, out)
	}
	if out := run("plan", "-input=false", "-no-color"); !regexp.MustCompile(`min_gpus\s*=\s*2\b`).MatchString(out) {
		t.Fatalf("plan does not show min_gpus = 2:\n%s", out)
	}

	// The same installed binary reports its version in the User-Agent.
	api := newRecordingAPIServer(t)
	writeFile(t, filepath.Join(work, "main.tf"), fmt.Sprintf(`terraform {
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
`, version, api.URL))
	run("plan", "-input=false", "-no-color")
	agents := api.agents()
	if len(agents) == 0 {
		t.Fatal("the provider sent no request to the API server")
	}
	for _, ua := range agents {
		if !strings.HasPrefix(ua, "terraform-provider-aiplatform/"+version+" Terraform/") {
			t.Fatalf("User-Agent %q does not carry the stamped version %s", ua, version)
		}
	}
}

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
