package serving

import (
	"strings"
	"testing"
)

func TestCheckLivenessPath(t *testing.T) {
	for p, want := range map[string]string{
		"/health":              "",
		"/healthz":             "",
		"/v1/health/live":      "",
		"/ready":               "readiness or dependency check",
		"/health/Dependencies": `segment "dependencies"`,
		"/api/upstream/ping":   `segment "upstream"`,
		"/health?db=1":         "has a query",
		"/health#x":            "has a query",
		"//db.internal/health": "names another host",
		"/proxy/http://db/":    "names another host",
		"/u@db/health":         "names another host",
	} {
		err := checkLivenessPath(p)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("checkLivenessPath(%q) = %v, want %q", p, err, want)
		}
	}
}

func TestDeploymentProgress(t *testing.T) {
	dep := func(gen, observed, want, updated, available, total int64) map[string]any {
		return map[string]any{
			"metadata": map[string]any{"generation": gen},
			"spec":     map[string]any{"replicas": want},
			"status": map[string]any{"observedGeneration": observed, "updatedReplicas": updated,
				"availableReplicas": available, "replicas": total},
		}
	}
	for _, tc := range []struct {
		obj  map[string]any
		done bool
	}{
		{dep(2, 2, 2, 2, 2, 2), true},
		{dep(2, 1, 2, 2, 2, 2), false}, // the controller has not seen the change
		{dep(2, 2, 2, 1, 2, 3), false}, // an old pod still runs
		{dep(2, 2, 2, 2, 1, 2), false}, // one not available yet (loading)
		{dep(3, 3, 0, 0, 0, 0), true},  // scaled to zero
	} {
		if done, line := deploymentProgress(tc.obj); done != tc.done {
			t.Errorf("%v: done %v (%s), want %v", tc.obj, done, line, tc.done)
		}
	}
}
