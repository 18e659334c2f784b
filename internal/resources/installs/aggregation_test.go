package installs_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// Kueue's chart has two aggregated ClusterRoles (batch-admin, batch-user)
// whose sources it installs too. The cluster runs kube-controller-manager's
// ClusterRole aggregation controller, as every real cluster does: when an
// uninstall deletes a source, it force-applies the aggregated role from its
// cache, re-creating one that was deleted a moment before. Helm's own wait
// then waited for that role forever (and a wait-less uninstall left it
// behind). Each uninstall must end with both roles gone; the log says how
// often one was deleted again.
func TestAccKueueUninstallWithAggregation(t *testing.T) {
	env := acctest.Env(t)
	ctx := context.Background()
	ch, err := helm.LoadChart(helm.Source{Path: kueueChart(t), Version: "0.17.0"})
	if err != nil {
		t.Fatal(err)
	}
	values, err := helm.KueueConfig{Frameworks: []string{"batch/job"}}.Values(ch.Values, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	again := 0
	rel := &helm.Release{Client: kube.NewClientFromREST(env.RESTConfig, false), Namespace: "kueue-system", Name: "kueue",
		Log: func(msg string) {
			if strings.Contains(msg, "re-created by") {
				mu.Lock()
				again++
				mu.Unlock()
				t.Log(msg)
			}
		}}
	for i := range 3 {
		if _, err := rel.Install(ctx, helm.Options{Chart: ch, Values: values, Timeout: 3 * time.Minute}); err != nil {
			t.Fatalf("install %d: %v", i, err)
		}
		if err := kueueBatchAdmin.Check(env, func(map[string]any) error { return nil })(nil); err != nil {
			t.Fatalf("install %d: %v", i, err)
		}
		start := time.Now()
		if err := rel.Uninstall(ctx, false, 3*time.Minute); err != nil {
			t.Fatalf("uninstall %d: %v", i, err)
		}
		t.Logf("uninstall %d took %s", i, time.Since(start).Round(100*time.Millisecond))
		time.Sleep(2 * time.Second) // a late re-creation would show now
		for _, role := range []acctest.Object{kueueBatchAdmin, kueueBatchUser} {
			if err := role.Gone(env)(nil); err != nil {
				t.Errorf("uninstall %d left %v", i, err)
			}
		}
	}
	t.Logf("roles deleted again after the aggregation controller re-created them: %d", again)
}
