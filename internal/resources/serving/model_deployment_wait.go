package serving

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// After the Deployment is applied: its Service (owned by the Deployment, so
// the garbage collector removes it with it), then the wait for readiness.

func afterModelDeployment(ctx context.Context, c *kube.Client, m *modelDeploymentModel) diag.Diagnostics {
	var diags diag.Diagnostics
	ref := m.ObjectRef()
	live, found, err := c.Get(ctx, deploymentKind, ref)
	if err != nil || !found {
		diags.AddError(fmt.Sprintf("Reading Deployment %s failed", ref), fmt.Sprint("not found after apply: ", err))
		return diags
	}
	uid, _ := object.Field(live.Object, "metadata", "uid").(string)
	svc := map[string]any{
		"metadata": map[string]any{
			"labels": map[string]any{deploySelectorLabel: ref.Name},
			"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": ref.Name, "uid": uid,
				"controller": true, "blockOwnerDeletion": true}},
		},
		"spec": map[string]any{
			"type":     "ClusterIP",
			"selector": map[string]any{deploySelectorLabel: ref.Name},
			"ports": []any{map[string]any{"name": "http", "protocol": "TCP", "port": m.ServicePort.ValueInt64(),
				"targetPort": m.Port.ValueInt64()}},
		},
	}
	if _, err := c.ApplyForce(ctx, serviceKind, kube.NewObject(serviceKind, ref, svc), c.ForceConflicts()); err != nil {
		diags.AddError(fmt.Sprintf("Applying Service %s failed", ref), err.Error())
		return diags
	}
	diags.Append(deriveDeployment(m)...)
	if !m.WaitForReady.ValueBool() || m.Replicas.ValueInt64() == 0 {
		return diags
	}
	// ctx is bounded by timeouts.create/update (object.Spec.ApplyTimeout).
	return append(diags, waitDeployment(ctx, c, m, object.Budget(ctx, deployDefaultWait))...)
}

// deploymentProgress reports whether the Deployment has rolled out: the
// controller saw this generation, every replica is updated and available.
func deploymentProgress(live map[string]any) (bool, string) {
	gen := object.Int64(object.Field(live, "metadata", "generation")).ValueInt64()
	status := object.Fields(live, "status")
	observed := object.Int64(status["observedGeneration"]).ValueInt64()
	want := object.Int64(object.Field(live, "spec", "replicas")).ValueInt64()
	updated := object.Int64(status["updatedReplicas"]).ValueInt64()
	available := object.Int64(status["availableReplicas"]).ValueInt64()
	total := object.Int64(status["replicas"]).ValueInt64()
	line := fmt.Sprintf("%d of %d replicas updated, %d available, %d in all", updated, want, available, total)
	return observed >= gen && updated == want && available == want && total == want, line
}

func waitDeployment(ctx context.Context, c *kube.Client, m *modelDeploymentModel, timeout time.Duration) diag.Diagnostics {
	var diags diag.Diagnostics
	ref := m.ObjectRef()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last, timedOut, err := pollReady(ctx, fmt.Sprintf("Deployment %s", ref), func() (bool, string, error) {
		live, found, err := c.Get(ctx, deploymentKind, ref)
		if err != nil || !found {
			return false, "", err
		}
		done, line := deploymentProgress(live.Object)
		return done, line, nil
	})
	switch {
	case err != nil:
		diags.AddError(fmt.Sprintf("Waiting for Deployment %s failed", ref), err.Error())
	case timedOut:
		detail := fmt.Sprintf("not available within %s (timeouts); last seen: %s.", timeout, last)
		if pods := pendingPods(context.Background(), c, ref.Namespace, deploySelectorLabel+"="+ref.Name); pods != "" {
			detail += " Pods not ready: " + pods + "."
		}
		diags.AddError(fmt.Sprintf("Deployment %s not ready", ref), detail+
			fmt.Sprintf(" Loading the weights was estimated at %d s. %s Or set wait_for_ready = false not to wait.",
				m.EstimatedLoadSeconds.ValueInt64(), object.TimeoutHint(ctx)))
	}
	return diags
}
