package serving

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// Wait: what the Kubernetes API can show of a RayService's readiness — the
// RayCluster KubeRay made for it, running. The Serve applications' health
// comes from the Ray dashboard and is not waited for.

// waitRayService waits until the RayService names a RayCluster (the pending
// one, else the active one) and KubeRay reports that cluster ready with the
// workers its spec asks for, logging each change and at least every 15 s.
// (KubeRay 1.5 writes the RayService's status only when the cluster names or
// the applications change, so its observedGeneration cannot tell whether a
// change was seen: the cluster's own readiness is what is waited for.)
func waitRayService(ctx context.Context, c *kube.Client, m *rayServiceModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if !m.WaitForReady.ValueBool() {
		return diags
	}
	ref := m.ObjectRef()
	cluster := ""
	last, timedOut, err := pollReady(ctx, fmt.Sprintf("RayService %s", ref), func() (bool, string, error) {
		live, found, err := c.Get(ctx, rayServiceKind, ref)
		if err != nil || !found {
			return false, "not found", err
		}
		readRayService(live.Object, m)
		m.SetObjectRef(ref)
		cluster = m.PendingClusterName.ValueString()
		if cluster == "" {
			cluster = m.ActiveClusterName.ValueString()
		}
		if cluster == "" {
			return false, "KubeRay has not created its RayCluster yet", nil
		}
		rc, found, err := c.Get(ctx, rayClusterKind, kube.Ref{Namespace: ref.Namespace, Name: cluster})
		if err != nil || !found {
			return false, fmt.Sprintf("RayCluster %s not found yet", cluster), err
		}
		state, progress := rayProgress(rc.Object)
		return state == rayReadyState, fmt.Sprintf("RayCluster %s: %s", cluster, progress), nil
	})
	switch {
	case err != nil:
		diags.AddError(fmt.Sprintf("Waiting for RayService %s failed", ref), err.Error())
	case timedOut:
		detail := fmt.Sprintf("KubeRay did not bring the RayService's RayCluster to ready within %s (timeouts); last seen: %s.", object.Budget(ctx, rayWaitTimeout), last)
		if cluster != "" {
			if pods := pendingPods(context.Background(), c, ref.Namespace, "ray.io/cluster="+cluster); pods != "" {
				detail += " Pods not ready: " + pods + "."
			}
		}
		diags.AddError(fmt.Sprintf("RayService %s not ready", ref), detail+
			" Is the KubeRay operator running, and do the nodes have room for every pod? "+
			object.TimeoutHint(ctx)+" Set wait_for_ready = false not to wait. The RayService is recorded in state (tainted).")
	}
	return diags
}
