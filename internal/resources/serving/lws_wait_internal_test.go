package serving

import (
	"testing"
)

// Ready means every group the spec asks for exists, runs the current
// template and is Ready, and the controller says Available without a
// rolling update in progress.
func TestLWSProgress(t *testing.T) {
	avail := map[string]any{"type": "Available", "status": "True", "message": "All replicas are ready"}
	progressing := map[string]any{"type": "Progressing", "status": "True", "message": "Replicas are progressing"}
	updating := map[string]any{"type": "UpdateInProgress", "status": "True", "message": "Rolling Upgrade is in progress"}
	old := map[string]any{"type": "Available", "status": "False"}
	lws := func(want int, ready, updated, total int, conds ...any) map[string]any {
		return map[string]any{"spec": map[string]any{"replicas": float64(want)}, "status": map[string]any{
			"readyReplicas": float64(ready), "updatedReplicas": float64(updated), "replicas": float64(total), "conditions": conds}}
	}
	for _, c := range []struct {
		name  string
		live  map[string]any
		ready bool
		line  string
	}{
		{"no status yet", map[string]any{"spec": map[string]any{"replicas": float64(2)}}, false, "0 of 2 groups ready, 0 updated, 0 in all"},
		{"progressing", lws(3, 1, 3, 3, old, progressing), false, "1 of 3 groups ready, 3 updated, 3 in all, Progressing (Replicas are progressing)"},
		{"available", lws(3, 3, 3, 3, avail), true, "3 of 3 groups ready, 3 updated, 3 in all, Available (All replicas are ready)"},
		{"rolling update", lws(2, 2, 1, 2, avail, updating), false, "2 of 2 groups ready, 1 updated, 2 in all, Available (All replicas are ready), UpdateInProgress (Rolling Upgrade is in progress)"},
		{"scaled up, status not yet", lws(3, 2, 2, 2, avail), false, "2 of 3 groups ready, 2 updated, 2 in all, Available (All replicas are ready)"},
		{"surge groups still there", lws(2, 2, 2, 3, avail), false, "2 of 2 groups ready, 2 updated, 3 in all, Available (All replicas are ready)"},
	} {
		ready, line := lwsProgress(c.live)
		if ready != c.ready || line != c.line {
			t.Errorf("%s: %v %q, want %v %q", c.name, ready, line, c.ready, c.line)
		}
	}
}
