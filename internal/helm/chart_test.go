package helm

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
)

func standInChart(t *testing.T) string {
	t.Helper()
	root, err := binaries.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "testdata", "charts", "volcano")
}

// A chart repository (index.yaml and a .tgz, served on loopback) is found by
// URL, name and version, downloaded into the cache and loaded.
func TestLoadChartFromRepository(t *testing.T) {
	t.Setenv("AIPLATFORM_HELM_CACHE", t.TempDir())
	dir := t.TempDir()
	ch, err := loader.Load(standInChart(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chartutil.Save(ch, dir); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	idx, err := repo.IndexDirectory(dir, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}

	got, err := LoadChart(Source{Repository: srv.URL, Name: "volcano", Version: "1.13.0"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Metadata.Name != "volcano" || got.Metadata.Version != "1.13.0" || len(got.CRDObjects()) != 2 {
		t.Fatalf("loaded %s %s with %d CRDs", got.Metadata.Name, got.Metadata.Version, len(got.CRDObjects()))
	}
	_, err = LoadChart(Source{Repository: srv.URL, Name: "volcano", Version: "9.9.9"})
	if err == nil || !strings.Contains(err.Error(), "9.9.9") {
		t.Fatalf("a missing version: %v", err)
	}
	_, err = LoadChart(Source{Path: standInChart(t), Version: "1.12.0"})
	if err == nil || !strings.Contains(err.Error(), "is version 1.13.0, not 1.12.0") {
		t.Fatalf("a local chart of another version: %v", err)
	}
}

// The plan reads a local chart's version without loading it: a directory's
// Chart.yaml, or a packaged chart; a path with no chart is an error naming
// it.
func TestLocalChartVersion(t *testing.T) {
	ch, err := loader.Load(standInChart(t))
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{standInChart(t), tgz} {
		if v, err := LocalChartVersion(path); err != nil || v != "1.13.0" {
			t.Errorf("LocalChartVersion(%s) = %q, %v; want 1.13.0", path, v, err)
		}
	}
	if _, err := LocalChartVersion("/nonexistent/volcano"); err == nil || !strings.Contains(err.Error(), "/nonexistent/volcano") {
		t.Errorf("a path with no chart: %v", err)
	}
	if err := VersionMismatch("/c", "1.13.0", "v1.13.0"); err != nil {
		t.Errorf("v1.13.0 asked of a 1.13.0 chart: %v", err)
	}
	if err := VersionMismatch("/c", "1.13.0", "1.12.0"); err == nil || !strings.Contains(err.Error(), `set version = "1.13.0"`) {
		t.Errorf("1.12.0 asked of a 1.13.0 chart: %v", err)
	}
}
