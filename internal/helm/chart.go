package helm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/registry"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
)

// Source says where a chart comes from: a local directory (Path), an OCI
// repository (Repository "oci://registry/path", the chart's reference being
// Repository/Name) or a classic chart repository (Repository "https://…"
// serving index.yaml, Name the chart in it).
type Source struct {
	Repository string
	Name       string
	Version    string
	Path       string
}

func (s Source) String() string {
	switch {
	case s.Path != "":
		return s.Path
	case registry.IsOCI(s.Repository):
		return strings.TrimSuffix(s.Repository, "/") + "/" + s.Name + ":" + s.Version
	default:
		return s.Repository + " " + s.Name + " " + s.Version
	}
}

// CacheDir holds downloaded charts and repository indexes:
// $AIPLATFORM_HELM_CACHE, else <user cache dir>/terraform-provider-aiplatform/helm.
func CacheDir() string {
	if d := os.Getenv("AIPLATFORM_HELM_CACHE"); d != "" {
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "terraform-provider-aiplatform", "helm")
}

// settings are Helm's client settings with every path under CacheDir, so
// that the user's own Helm configuration neither matters nor changes.
func settings() *cli.EnvSettings {
	s := cli.New()
	dir := CacheDir()
	s.RepositoryCache = filepath.Join(dir, "repository")
	s.RepositoryConfig = filepath.Join(dir, "repositories.yaml")
	s.RegistryConfig = filepath.Join(dir, "registry", "config.json")
	return s
}

// Chart is what the provider knows of one product's chart besides its
// configuration: where it comes from by default and where it is installed.
// Each chart's descriptor, configuration type and live lookup are in one
// file of this package (kueue.go, volcano.go, kuberay.go, lws.go).
type Chart struct {
	Product   string // "Kueue", as messages name it
	Default   Source // default repository and name; Version is the default version
	Release   string // default release name
	Namespace string // default namespace
	// Upgrades are upstream's rules and notes for version changes.
	Upgrades catalog.Upgrades
}

// chartOf is a product's chart as the catalogue states it.
func chartOf(p catalog.Product) Chart {
	return Chart{Product: p.Name, Default: Source{Repository: p.ChartRepo, Name: p.ChartName, Version: p.DefaultVersion},
		Release: p.Release, Namespace: p.Namespace, Upgrades: p.Upgrades}
}

// Config is a chart's typed configuration: what the provider's attributes
// set in the chart's values.
type Config interface {
	// Values returns the chart's values: raw (the user's `values`
	// document) with the typed configuration written in. chartDefaults are
	// the chart's own values.
	Values(chartDefaults, raw map[string]any) (map[string]any, error)
}

// Values returns the values for a chart: cfg's, or raw alone when the chart
// has no typed configuration (cfg nil).
func Values(cfg Config, chartDefaults, raw map[string]any) (map[string]any, error) {
	if cfg == nil {
		return Merge(map[string]any{}, raw), nil
	}
	return cfg.Values(chartDefaults, raw)
}

// LocalChartVersion is the version of the local chart at path: a
// directory's Chart.yaml, read without loading the chart (for the plan), or
// a packaged chart (.tgz), loaded.
func LocalChartVersion(path string) (string, error) {
	if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
		ch, err := loader.Load(path)
		if err != nil {
			return "", fmt.Errorf("loading the chart at %s: %w", path, err)
		}
		return ch.Metadata.Version, nil
	}
	md, err := chartutil.LoadChartfile(filepath.Join(path, "Chart.yaml"))
	if err != nil {
		return "", fmt.Errorf("loading the chart at %s: %w", path, err)
	}
	return md.Version, nil
}

// VersionMismatch is the error of a local chart (at dir) of version have
// when version want was asked for ("v" in front of have allowed), nil when
// it is that version or none was asked for.
func VersionMismatch(dir, have, want string) error {
	if want == "" || have == want || "v"+have == want {
		return nil
	}
	return fmt.Errorf("the chart at %s is version %s, not %s: set version = %q or point path at the %s chart", dir, have, want, have, want)
}

var downloadMu sync.Mutex // one download into the cache at a time

// LoadChart loads the chart. A local directory must hold the requested
// version when one is given; remote charts are downloaded into CacheDir
// (and read from there the next time).
func LoadChart(src Source) (*chart.Chart, error) {
	if src.Path != "" {
		ch, err := loader.Load(src.Path)
		if err != nil {
			return nil, fmt.Errorf("loading the chart at %s: %w", src.Path, err)
		}
		if err := VersionMismatch(src.Path, ch.Metadata.Version, src.Version); err != nil {
			return nil, err
		}
		return ch, nil
	}
	if src.Repository == "" || src.Name == "" {
		return nil, fmt.Errorf("chart: set either path, or repository and name")
	}
	downloadMu.Lock()
	defer downloadMu.Unlock()
	s := settings()
	if err := os.MkdirAll(s.RepositoryCache, 0o755); err != nil {
		return nil, err
	}
	locate := action.NewInstall(&action.Configuration{})
	locate.Version = src.Version
	ref := src.Name
	if registry.IsOCI(src.Repository) {
		rc, err := registry.NewClient(registry.ClientOptCredentialsFile(s.RegistryConfig), registry.ClientOptEnableCache(true))
		if err != nil {
			return nil, err
		}
		locate.SetRegistryClient(rc)
		ref = strings.TrimSuffix(src.Repository, "/") + "/" + src.Name
	} else {
		locate.RepoURL = src.Repository
	}
	file, err := locate.LocateChart(ref, s)
	if err != nil {
		return nil, fmt.Errorf("fetching chart %s: %w", src, err)
	}
	ch, err := loader.Load(file)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s from %s: %w", src, file, err)
	}
	return ch, nil
}
