package catalog_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

func TestUpgradePlan(t *testing.T) {
	stuck := map[string][]string{"clusterqueues.kueue.x-k8s.io": {"v1beta1", "v1beta2"}, "cohorts.kueue.x-k8s.io": {"v1beta2"}}
	migrated := map[string][]string{"clusterqueues.kueue.x-k8s.io": {"v1beta2"}}
	for _, c := range []struct {
		name      string
		u         catalog.Upgrades
		from, to  string
		stored    map[string][]string
		refusal   []string // substrings; nil: no refusal
		notes     []string // substrings of the joined notes
		noteCount int
	}{
		{name: "trainer skips 2.3", u: catalog.TrainerUpgrades, from: "2.2.0", to: "2.4.0", refusal: []string{"from 2.2.0 to 2.4.0 directly", `set version = "2.3.0", apply, then set version = "2.4.0"`}},
		{name: "trainer to 2.3", u: catalog.TrainerUpgrades, from: "2.2.0", to: "2.3.1", notes: []string{"Kubeflow Trainer 2.3.0: the CRDs move"}, noteCount: 1},
		{name: "trainer past 2.3", u: catalog.TrainerUpgrades, from: "2.3.0", to: "2.4.0", noteCount: 0},
		{name: "kueue 0.17 to 0.19", u: catalog.KueueUpgrades, from: "0.17.0", to: "0.19.2", stored: migrated, notes: []string{"Kueue 0.19.0: WaitForPodsReady is on by default"}, noteCount: 3},
		{name: "kueue to 0.20 with v1beta1 stored", u: catalog.KueueUpgrades, from: "0.19.2", to: "0.20.0", stored: stuck,
			refusal: []string{"Kueue 0.20.0 stops serving kueue.x-k8s.io/v1beta1", "status.storedVersions of clusterqueues.kueue.x-k8s.io list it", "stay below 0.20.0"}},
		{name: "kueue to 0.20 migrated", u: catalog.KueueUpgrades, from: "0.19.2", to: "v0.20.1", stored: migrated, notes: []string{"no CRD of this cluster stores objects at it"}, noteCount: 1},
		{name: "kueue to 0.20, CRDs unreadable", u: catalog.KueueUpgrades, from: "0.19.2", to: "0.20.0", notes: []string{"whether objects are still stored at it was not checked"}, noteCount: 1},
		{name: "kueue down across storage", u: catalog.KueueUpgrades, from: "0.17.0", to: "0.15.2", refusal: []string{"cannot be downgraded from 0.17.0 to 0.15.2", "v1beta2 since 0.16.0"}},
		{name: "kueue down below 0.19", u: catalog.KueueUpgrades, from: "0.19.2", to: "0.17.0", notes: []string{"downgrading below Kueue 0.19.0 undoes: WaitForPodsReady"}, noteCount: 3},
		{name: "same", u: catalog.KueueUpgrades, from: "0.19.2", to: "v0.19.2"},
		{name: "unparsable", u: catalog.KueueUpgrades, from: "main", to: "0.20.0", stored: stuck},
	} {
		t.Run(c.name, func(t *testing.T) {
			product := map[string]string{catalog.TrainerGroup: "Kubeflow Trainer", catalog.KueueGroup: "Kueue"}[c.u.Group]
			p := c.u.Plan(product, c.from, c.to, c.stored)
			for _, s := range c.refusal {
				if !strings.Contains(p.Refusal, s) {
					t.Errorf("refusal %q lacks %q", p.Refusal, s)
				}
			}
			if c.refusal == nil && p.Refusal != "" {
				t.Errorf("refused: %s", p.Refusal)
			}
			if c.refusal != nil {
				return
			}
			joined := strings.Join(p.Notes, "\n")
			for _, s := range c.notes {
				if !strings.Contains(joined, s) {
					t.Errorf("notes %q lack %q", joined, s)
				}
			}
			if len(p.Notes) != c.noteCount {
				t.Errorf("%d notes, want %d: %q", len(p.Notes), c.noteCount, p.Notes)
			}
		})
	}
}

// The facts the upgrade notes state, checked against the upstream source in
// the Go module cache: Kueue 0.19 defaults WaitForPodsReady on and 0.17 does
// not; LWS 0.9 has the DisaggregatedSet CRD and 0.7 does not.
func TestUpgradeFactsAgainstUpstream(t *testing.T) {
	ctx := context.Background()
	has := func(module, version, rel, want string) bool {
		t.Helper()
		dir, err := testenv.ModuleDir(ctx, module, version)
		if err != nil {
			t.Fatalf("%s@%s: %v", module, version, err)
		}
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if os.IsNotExist(err) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(b), want)
	}
	const defaults, on = "apis/config/v1beta2/defaults.go", "cfg.WaitForPodsReady = cmp.Or("
	if !has(catalog.KueueModule, "v0.19.2", defaults, on) || has(catalog.KueueModule, "v0.17.0", defaults, on) {
		t.Error("Kueue's WaitForPodsReady default: expected 0.19.2 to default it on and 0.17.0 not to; KueueUpgrades says so")
	}
	const crd = "config/crd/bases/disaggregatedset.x-k8s.io_disaggregatedsets.yaml"
	if !has(catalog.LWS.Module, "v0.9.0", crd, "DisaggregatedSet") || has(catalog.LWS.Module, "v0.7.0", crd, "DisaggregatedSet") {
		t.Error("LWS's DisaggregatedSet CRD: expected in 0.9.0 and not in 0.7.0; LWSUpgrades says so")
	}
}
