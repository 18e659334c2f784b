package installs_test

import (
	"context"
	"testing"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// TestAccKueueTimings measures what the resource does with Kueue's chart
// (78 objects) on the test cluster: install including the readiness wait,
// a drift check (what every refresh costs), an upgrade, uninstall.
func TestAccKueueTimings(t *testing.T) {
	env := acctest.Env(t)
	ctx := context.Background()
	rel := &helm.Release{Client: kube.NewClientFromREST(env.RESTConfig, false), Namespace: "kueue-system", Name: "kueue"}
	if testing.Verbose() {
		rel.Log = func(msg string) { t.Log(msg) }
	}
	ch, err := helm.LoadChart(helm.Source{Path: kueueChart(t), Version: "0.17.0"})
	if err != nil {
		t.Fatal(err)
	}
	values := func(frameworks ...string) map[string]any {
		v, err := helm.KueueConfig{Frameworks: frameworks}.Values(ch.Values, nil)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	measure := func(what string, fn func() error) time.Duration {
		start := time.Now()
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		d := time.Since(start)
		t.Logf("%-34s %s", what, d.Round(10*time.Millisecond))
		return d
	}
	measure("install (with readiness wait)", func() error {
		_, err := rel.Install(ctx, helm.Options{Chart: ch, Values: values("batch/job"), Timeout: 3 * time.Minute})
		return err
	})
	for i := range 3 {
		measure("drift check "+string(rune('1'+i)), func() error {
			cur, _, err := rel.Get(ctx)
			if err != nil {
				return err
			}
			rep, err := rel.Drift(ctx, cur)
			if err == nil && (len(rep.Lines) > 0 || len(rep.Unchecked) > 0) {
				t.Errorf("drift right after install: %v %v", rep.Lines, rep.Unchecked)
			}
			t.Logf("drift check: %d objects, %d compared by the server's dry run, the rest locally", rep.Objects, rep.DryRuns)
			return err
		})
	}
	measure("upgrade (config change, wait)", func() error {
		_, err := rel.Upgrade(ctx, helm.Options{Chart: ch, Values: values("batch/job", "jobset.x-k8s.io/jobset"), Timeout: 3 * time.Minute})
		return err
	})
	measure("upgrade (no change)", func() error {
		_, err := rel.Upgrade(ctx, helm.Options{Chart: ch, Values: values("batch/job", "jobset.x-k8s.io/jobset"), Timeout: 3 * time.Minute})
		return err
	})
	measure("uninstall (CRDs kept)", func() error { return rel.Uninstall(ctx, false, 3*time.Minute) })
}
