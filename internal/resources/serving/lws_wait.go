package serving

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// Wait: a LeaderWorkerSet's groups Ready after apply, as the LWS controller
// reports them.

const (
	// lwsWaitTimeout is timeouts.create/update's default: how long
	// wait_for_ready waits for the groups.
	lwsWaitTimeout = 10 * time.Minute
	// lwsNameLabel is on every pod of a LeaderWorkerSet.
	lwsNameLabel = "leaderworkerset.sigs.k8s.io/name"
)

// waitLWS waits until the LWS controller reports every group Ready and
// updated, logging progress at INFO. It does not wait when wait_for_ready is
// false, for replicas = 0 (no group to be ready), or for a queued group
// (queue_name: Kueue may hold its pods gated until it admits them, which can
// be long after the apply, as with aiplatform_ray_cluster).
func waitLWS(ctx context.Context, c *kube.Client, m *lwsGroupModel) diag.Diagnostics {
	var diags diag.Diagnostics
	ref := m.ObjectRef()
	switch {
	case !m.WaitForReady.ValueBool():
		return diags
	case m.Replicas.ValueInt64() == 0:
		tflog.Info(ctx, fmt.Sprintf("LeaderWorkerSet %s has replicas = 0: no group to wait for", ref))
		return diags
	case object.Known(m.QueueName):
		tflog.Info(ctx, fmt.Sprintf("LeaderWorkerSet %s is queued in %q: its groups start when Kueue admits them; not waiting", ref, m.QueueName.ValueString()))
		return diags
	}
	// The controller writes no observedGeneration: right after a template
	// change the status may still describe the previous revision as ready.
	// Ready is believed once seen on two polls in a row (one second apart),
	// by when the controller has counted the change.
	seen := 0
	last, timedOut, err := pollReady(ctx, fmt.Sprintf("LeaderWorkerSet %s", ref), func() (bool, string, error) {
		live, found, err := c.Get(ctx, lwsKind, ref)
		if err != nil || !found {
			return false, "", err
		}
		ready, line := lwsProgress(live.Object)
		if !ready {
			seen = 0
			return false, line, nil
		}
		seen++
		return seen >= 2, line, nil
	})
	switch {
	case err != nil:
		diags.AddError(fmt.Sprintf("Waiting for LeaderWorkerSet %s failed", ref), err.Error())
	case timedOut:
		detail := fmt.Sprintf("The LWS controller did not report every group ready within %s (timeouts); last seen: %s.",
			object.Budget(ctx, lwsWaitTimeout), orNothing(last))
		if pods := pendingPods(context.Background(), c, ref.Namespace, lwsNameLabel+"="+ref.Name); pods != "" {
			detail += " Pods not ready: " + pods + "."
		}
		diags.AddError(fmt.Sprintf("LeaderWorkerSet %s not ready", ref), detail+
			" Is the LWS controller running, and do the nodes have room for every pod of every group? "+
			object.TimeoutHint(ctx)+" Set wait_for_ready = false not to wait. The LeaderWorkerSet is recorded in state (tainted).")
	}
	return diags
}

// lwsProgress reports whether every group the spec asks for exists, runs
// the current template and is Ready, with a one-line summary of the status.
func lwsProgress(live map[string]any) (bool, string) {
	want := object.Int64(object.Field(live, "spec", "replicas")).ValueInt64()
	status := object.Fields(live, "status")
	ready := object.Int64(status["readyReplicas"]).ValueInt64()
	updated := object.Int64(status["updatedReplicas"]).ValueInt64()
	total := object.Int64(status["replicas"]).ValueInt64()
	var conds []string
	available, updating := false, false
	for _, cnd := range object.Items(live, "status", "conditions") {
		if cnd["status"] != "True" {
			continue
		}
		t, _ := cnd["type"].(string)
		available = available || t == "Available"
		updating = updating || t == "UpdateInProgress"
		if msg, _ := cnd["message"].(string); msg != "" {
			t += " (" + msg + ")"
		}
		conds = append(conds, t)
	}
	line := fmt.Sprintf("%d of %d groups ready, %d updated, %d in all", ready, want, updated, total)
	if len(conds) > 0 {
		line += ", " + strings.Join(conds, ", ")
	}
	return available && !updating && ready == want && updated == want && total == want, line
}

func orNothing(s string) string {
	if s == "" {
		return "no status yet"
	}
	return s
}
