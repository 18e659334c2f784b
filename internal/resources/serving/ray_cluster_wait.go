package serving

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// Wait: readiness after apply, reported as KubeRay and the pods progress.

// waitRayCluster waits until KubeRay reports the cluster ready, logging each
// change of state and at least every 15 s. A suspended or queued cluster is
// not waited for: it runs when Kueue admits it.
func waitRayCluster(ctx context.Context, c *kube.Client, m *rayClusterModel) diag.Diagnostics {
	var diags diag.Diagnostics
	ref := m.ObjectRef()
	switch {
	case !m.WaitForReady.ValueBool():
		return diags
	case m.Suspend.ValueBool():
		tflog.Info(ctx, fmt.Sprintf("RayCluster %s is suspended: not waiting for it", ref))
		return diags
	case object.Known(m.QueueName):
		tflog.Info(ctx, fmt.Sprintf("RayCluster %s is queued in %q: it starts when Kueue admits it; not waiting", ref, m.QueueName.ValueString()))
		return diags
	}
	last, timedOut, err := pollReady(ctx, fmt.Sprintf("RayCluster %s", ref), func() (bool, string, error) {
		live, found, err := c.Get(ctx, rayClusterKind, ref)
		if err != nil || !found {
			return false, "", err
		}
		readRayCluster(live.Object, m)
		m.SetObjectRef(ref)
		state, line := rayProgress(live.Object)
		return state == rayReadyState, line, nil
	})
	switch {
	case err != nil:
		diags.AddError(fmt.Sprintf("Waiting for RayCluster %s failed", ref), err.Error())
	case timedOut:
		detail := fmt.Sprintf("KubeRay did not report the RayCluster ready within %s (timeouts); last seen: %s.", object.Budget(ctx, rayWaitTimeout), last)
		if pods := pendingPods(context.Background(), c, ref.Namespace, "ray.io/cluster="+ref.Name); pods != "" {
			detail += " Pods not ready: " + pods + "."
		}
		diags.AddError(fmt.Sprintf("RayCluster %s not ready", ref), detail+
			" Is the KubeRay operator running, and do the nodes have room for every pod? "+
			object.TimeoutHint(ctx)+" Set wait_for_ready = false not to wait. The RayCluster is recorded in state (tainted).")
	}
	return diags
}

// rayProgress is the cluster's state and a one-line summary of its status.
func rayProgress(live map[string]any) (state, line string) {
	status := object.Fields(live, "status")
	state, _ = status["state"].(string)
	desired := object.Int64(status["desiredWorkerReplicas"]).ValueInt64()
	ready := object.Int64(status["readyWorkerReplicas"]).ValueInt64()
	// KubeRay 1.5 writes its status only when something in it changes, so
	// observedGeneration lags behind a change that alters no status field
	// (an idle timeout, say): it cannot tell whether the spec was seen. The
	// worker counts can: the status must want what the spec asks for, and
	// have that many ready.
	if want := rayDesiredWorkers(live); state != "" && (desired != want || ready < desired) {
		state = ""
	}
	s := state
	if s == "" {
		s = "no state yet"
	}
	line = fmt.Sprintf("state %s, %d of %d workers ready", s, ready, desired)
	if r, _ := status["reason"].(string); r != "" {
		line += ", " + r
	}
	return state, line
}

// rayDesiredWorkers is the number of worker pods the spec asks for, as
// KubeRay 1.5 counts it (utils.GetWorkerGroupDesiredReplicas): each group's
// replicas kept within min…max (none while the group is suspended), times its
// hosts per replica.
func rayDesiredWorkers(live map[string]any) int64 {
	var n int64
	for _, g := range object.Items(live, "spec", "workerGroupSpecs") {
		if g["suspend"] == true {
			continue
		}
		replicas := object.Int64(g["replicas"]).ValueInt64()
		if lo := object.Int64(g["minReplicas"]); !lo.IsNull() && replicas < lo.ValueInt64() {
			replicas = lo.ValueInt64()
		}
		if hi := object.Int64(g["maxReplicas"]); !hi.IsNull() && replicas > hi.ValueInt64() {
			replicas = hi.ValueInt64()
		}
		hosts := object.Int64(g["numOfHosts"])
		if hosts.IsNull() || hosts.ValueInt64() < 1 {
			hosts = types.Int64Value(1)
		}
		n += replicas * hosts.ValueInt64()
	}
	return n
}

// pendingPods lists the pods matching selector that are not Ready, each with
// its phase and why it is not scheduled, for a readiness timeout's message
// ("" when none, or when they cannot be listed within 5 s).
func pendingPods(ctx context.Context, c *kube.Client, namespace, selector string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	pods, err := c.PodsMatching(ctx, namespace, selector)
	if err != nil {
		return ""
	}
	var out []string
	for _, p := range pods {
		ready := false
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if ready {
			continue
		}
		why := string(p.Status.Phase)
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status != corev1.ConditionTrue && cond.Message != "" {
				why += " (" + cond.Message + ")"
			}
		}
		out = append(out, p.Name+" "+why)
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}
