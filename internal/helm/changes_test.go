package helm_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// load loads a product's chart of a module version from the Go module cache.
func load(t *testing.T, p catalog.Product, version string) *chart.Chart {
	t.Helper()
	dir, err := testenv.ModuleDir(context.Background(), p.Module, version)
	if err != nil {
		t.Fatalf("%s@%s: %v", p.Module, version, err)
	}
	ch, err := loader.Load(filepath.Join(dir, p.ChartDir))
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// render renders a product's chart of a module version from the Go module
// cache, with its default values.
func render(t *testing.T, p catalog.Product, version string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := helm.Render(load(t, p, version), map[string]any{}, p.Namespace, p.Release, nil)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func contains(lines []string, want string) bool {
	return slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, want) })
}

// What an upgrade changes, read from both upstream charts: LWS 0.9 adds the
// DisaggregatedSet CRD (from its chart's crds/ directory, where 0.9 moved
// its CRDs) and its own webhooks; Kueue 0.17 → 0.19 adds fields to its
// v1beta2 schemas and keeps serving v1beta1. The same chart twice changes
// nothing.
func TestChangesBetweenUpstreamCharts(t *testing.T) {
	lws07, lws09 := render(t, catalog.LWS, "v0.7.0"), render(t, catalog.LWS, "v0.9.0")
	got := helm.Changes(lws07, lws09)
	t.Logf("LWS 0.7.0 → 0.9.0:\n%s", strings.Join(got, "\n"))
	if !contains(got, "CRD disaggregatedsets.disaggregatedset.x-k8s.io is added (serves v1") {
		t.Errorf("LWS 0.7.0 → 0.9.0: no DisaggregatedSet CRD added in %q", got)
	}
	if contains(got, "leaderworkersets.leaderworkerset.x-k8s.io is no longer in the chart") {
		t.Errorf("LWS 0.9.0's LeaderWorkerSet CRD (in crds/) was not read: %q", got)
	}
	if back := helm.Changes(lws09, lws07); !contains(back, "CRD disaggregatedsets.disaggregatedset.x-k8s.io is no longer in the chart") {
		t.Errorf("LWS 0.9.0 → 0.7.0: %q", back)
	}
	if same := helm.Changes(lws09, lws09); len(same) != 0 {
		t.Errorf("the same chart: %q", same)
	}

	kueue := catalog.Product{Module: catalog.KueueModule, ChartDir: catalog.KueueChartDir, Namespace: catalog.KueueNamespace, Release: catalog.KueueRelease}
	k17, k19 := render(t, kueue, "v0.17.0"), render(t, kueue, "v0.19.2")
	got = helm.Changes(k17, k19)
	t.Logf("Kueue 0.17.0 → 0.19.2:\n%s", strings.Join(got, "\n"))
	if !contains(got, "CRD clusterqueues.kueue.x-k8s.io v1beta2 schema: ") {
		t.Errorf("Kueue 0.17.0 → 0.19.2: no schema change of clusterqueues v1beta2 in %q", got)
	}
	if contains(got, "stops serving v1beta1") {
		t.Errorf("Kueue 0.19 still serves v1beta1: %q", got)
	}
}

// Kubeflow Trainer 2.3 renders in its templates the three CRDs 2.2 created
// from crds/: the upgrade must take them over. LWS 0.7 → 0.9 moved the
// other way (templates into crds/), and the same chart twice moves nothing.
func TestMovedCRDs(t *testing.T) {
	t22, t23 := load(t, catalog.Trainer, "v2.2.0"), load(t, catalog.Trainer, "v2.3.0")
	vals := map[string]any{"jobset": map[string]any{"install": false}}
	rendered, err := helm.Render(t23, vals, catalog.Trainer.Namespace, catalog.Trainer.Release, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"clustertrainingruntimes.trainer.kubeflow.org", "trainingruntimes.trainer.kubeflow.org", "trainjobs.trainer.kubeflow.org"}
	if got := helm.MovedCRDs(t22, t23, rendered); !slices.Equal(got, want) {
		t.Errorf("Trainer 2.2.0 → 2.3.0: %q, want %q", got, want)
	}
	if got := helm.MovedCRDs(t23, t23, rendered); len(got) != 0 {
		t.Errorf("Trainer 2.3.0 → 2.3.0: %q", got)
	}
	crdsOff, err := helm.Render(t23, map[string]any{"jobset": map[string]any{"install": false}, "crds": map[string]any{"enabled": false}},
		catalog.Trainer.Namespace, catalog.Trainer.Release, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := helm.MovedCRDs(t22, t23, crdsOff); len(got) != 0 {
		t.Errorf("Trainer 2.3.0 with crds.enabled=false renders no CRD, yet %q", got)
	}
	lws07, lws09 := load(t, catalog.LWS, "v0.7.0"), load(t, catalog.LWS, "v0.9.0")
	if got := helm.MovedCRDs(lws07, lws09, render(t, catalog.LWS, "v0.9.0")); len(got) != 0 {
		t.Errorf("LWS 0.7.0 → 0.9.0: %q", got)
	}
	if note := helm.MovedCRDNote(want[2]); !strings.Contains(note, "trainjobs.trainer.kubeflow.org moves from the chart's crds/ into its templates") {
		t.Error(note)
	}
}
