package catalog

import "strings"

// Product is how one upstream product is installed: the Go module that holds
// its source, charts and CRDs (what the test environment builds and reads),
// its published chart, the version installed when none is set, and the
// release and namespace it goes into by default.
type Product struct {
	Name   string // as the docs and diagnostics name it
	Module string // the Go module of its source (tags v<version>)
	// ChartRepo and ChartName locate the published chart; ChartDir is the
	// same chart inside Module (empty for a product without a chart).
	ChartRepo, ChartName, ChartDir string
	// DefaultVersion is the chart's version as its repository spells it.
	DefaultVersion     string
	Release, Namespace string
	// Serves is the group/version whose being served says the product's
	// CRDs are in a cluster.
	Serves string
	// Upgrades are upstream's rules and notes for version changes.
	Upgrades Upgrades
}

// ModuleVersion is the module's tag of a chart version: "0.7.0" → "v0.7.0".
func ModuleVersion(version string) string {
	return "v" + strings.TrimPrefix(version, "v")
}
