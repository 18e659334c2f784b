package serving

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// The resource around the generic path (the pool is its object): the
// timeouts block, the picker's Deployment read with the pool (its drift),
// the picker's objects applied after the pool and deleted with it, and the
// wait for the picker.

// inferencePoolResource is the generic object resource of the pool plus
// what the picker's objects need.
type inferencePoolResource struct {
	resource.Resource // object.Resource of inferencePoolModel
	client            *kube.Client
}

var (
	_ resource.ResourceWithConfigure      = (*inferencePoolResource)(nil)
	_ resource.ResourceWithImportState    = (*inferencePoolResource)(nil)
	_ resource.ResourceWithValidateConfig = (*inferencePoolResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*inferencePoolResource)(nil)
)

func (r *inferencePoolResource) Configure(ctx context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.Resource.(resource.ResourceWithConfigure).Configure(ctx, req, resp)
	r.client, _ = req.ProviderData.(*kube.Client)
}

func (r *inferencePoolResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	r.Resource.(resource.ResourceWithValidateConfig).ValidateConfig(ctx, req, resp)
}

func (r *inferencePoolResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	r.Resource.(resource.ResourceWithModifyPlan).ModifyPlan(ctx, req, resp)
}

func (r *inferencePoolResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	r.Resource.(resource.ResourceWithImportState).ImportState(ctx, req, resp)
}

func (r *inferencePoolResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	r.Resource.Create(ctx, req, resp)
}

// Read reads the pool (the generic path), then the picker's Deployment.
func (r *inferencePoolResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var prior inferencePoolModel
	importing := false
	if d := req.State.Get(ctx, &prior); !d.HasError() {
		importing = prior.Selector.IsNull()
	}
	r.Resource.Read(ctx, req, resp)
	if resp.Diagnostics.HasError() || resp.State.Raw.IsNull() || r.client == nil {
		return
	}
	var m inferencePoolModel
	if resp.Diagnostics.Append(resp.State.Get(ctx, &m)...); resp.Diagnostics.HasError() {
		return
	}
	ref := kubeRef(m.Namespace.ValueString(), m.pickerName())
	live, found, err := r.client.Get(ctx, deploymentKind, ref)
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Reading Deployment %s failed", ref), err.Error())
		return
	}
	if importing {
		m.Template = nil
	}
	var obj map[string]any
	if found {
		obj = live.Object
	}
	readPicker(obj, &m, importing)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Delete deletes the pool, then the picker's objects (which the garbage
// collector would remove too, as the pool owns them), waiting until gone.
func (r *inferencePoolResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	r.Resource.Delete(ctx, req, resp)
	if resp.Diagnostics.HasError() || r.client == nil {
		return
	}
	var m inferencePoolModel
	if resp.Diagnostics.Append(req.State.Get(ctx, &m)...); resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	ref := kubeRef(m.Namespace.ValueString(), m.pickerName())
	for _, k := range []kube.Kind{deploymentKind, serviceKind, roleBindingKind, roleKind, serviceAccountKind} {
		if err := r.client.Delete(ctx, k, ref); err != nil {
			resp.Diagnostics.AddError(fmt.Sprintf("Deleting %s %s failed", k.Kind, ref), err.Error())
		}
	}
}

func kubeRef(namespace, name string) kube.Ref { return kube.Ref{Namespace: namespace, Name: name} }

// afterInferencePool applies the picker's objects, owned by the pool just
// applied, and waits until its Deployment is available.
func afterInferencePool(ctx context.Context, c *kube.Client, m *inferencePoolModel) diag.Diagnostics {
	var diags diag.Diagnostics
	m.derive()
	poolRef := m.ObjectRef()
	live, found, err := c.Get(ctx, inferencePoolKind, poolRef)
	if err != nil || !found {
		diags.AddError(fmt.Sprintf("Reading InferencePool %s failed", poolRef), fmt.Sprint("not found after apply: ", err))
		return diags
	}
	uid, _ := object.Field(live.Object, "metadata", "uid").(string)
	owner := []any{map[string]any{"apiVersion": inferencePoolKind.Group + "/" + inferencePoolKind.Version, "kind": inferencePoolKind.Kind,
		"name": poolRef.Name, "uid": uid, "controller": true, "blockOwnerDeletion": true}}
	ref := kubeRef(poolRef.Namespace, m.pickerName())
	for _, o := range []struct {
		kind   kube.Kind
		fields map[string]any
	}{
		{serviceAccountKind, map[string]any{}},
		{roleKind, map[string]any{"rules": pickerRules}},
		{roleBindingKind, pickerRoleBindingFields(m)},
		{serviceKind, pickerServiceFields(m)},
		{deploymentKind, pickerDeploymentFields(m)},
	} {
		o.fields["metadata"] = map[string]any{"labels": map[string]any{pickerLabel: poolRef.Name}, "ownerReferences": owner}
		if _, err := c.ApplyForce(ctx, o.kind, kube.NewObject(o.kind, ref, o.fields), c.ForceConflicts()); err != nil {
			diags.AddError(fmt.Sprintf("Applying %s %s failed", o.kind.Kind, ref), err.Error())
			return diags
		}
	}
	// The generic write runs AfterApply within the create or update
	// timeout (Spec.ApplyTimeout is the default).
	return append(diags, waitPicker(ctx, c, m, object.Budget(ctx, pickerDefaultTimeout))...)
}

// waitPicker waits until the picker's Deployment has rolled out: its pods
// are Ready, which the picker reports once it has read the pool.
func waitPicker(ctx context.Context, c *kube.Client, m *inferencePoolModel, timeout time.Duration) diag.Diagnostics {
	var diags diag.Diagnostics
	ref := kubeRef(m.Namespace.ValueString(), m.pickerName())
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last, timedOut, err := pollReady(ctx, fmt.Sprintf("endpoint picker %s", ref), func() (bool, string, error) {
		live, found, err := c.Get(ctx, deploymentKind, ref)
		if err != nil {
			return false, "", err
		}
		if !found {
			return false, "", errors.New("the picker's Deployment is gone")
		}
		done, line := deploymentProgress(live.Object)
		return done, line, nil
	})
	switch {
	case err != nil:
		diags.AddError(fmt.Sprintf("Waiting for endpoint picker %s failed", ref), err.Error())
	case timedOut:
		detail := fmt.Sprintf("not available within %s (timeouts); last seen: %s.", timeout, last)
		if pods := pendingPods(context.Background(), c, ref.Namespace, pickerLabel+"="+m.Name.ValueString()); pods != "" {
			detail += " Pods not ready: " + pods + "."
		}
		diags.AddAttributeError(path.Root("timeouts"), fmt.Sprintf("Endpoint picker %s not ready", ref), detail+
			" The picker is Ready once it has read its InferencePool: check that its ServiceAccount may read pods and "+
			"inferencepools in the namespace, and the picker's log. "+object.TimeoutHint(ctx))
	}
	return diags
}
