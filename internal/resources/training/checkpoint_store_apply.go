package training

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	tfpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	kresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// Plan, apply, read, delete and import of a checkpoint store.

const deleteTimeout = 5 * time.Minute

func (r *checkpointStore) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		var prior storeModel
		if d := req.State.Get(ctx, &prior); !d.HasError() && kindOf(&prior) == KindPVC && prior.RetainOnDestroy.ValueBool() {
			resp.Diagnostics.AddWarning("Destroy keeps the checkpoint claim", keepText(&prior))
		}
		return
	}
	var plan, config storeModel
	if d := req.Plan.Get(ctx, &plan); d.HasError() {
		return // values unknown until apply
	}
	if d := req.Config.Get(ctx, &config); d.HasError() {
		return
	}
	var prior *storeModel
	if !req.State.Raw.IsNull() {
		prior = &storeModel{}
		if d := req.State.Get(ctx, prior); d.HasError() {
			prior = nil
		}
	}
	resp.Diagnostics.Append(object.WithPaths(planStore(&plan, &config, prior))...)
	if resp.Diagnostics.HasError() {
		return
	}
	if prior != nil && plan.Name.Equal(prior.Name) && plan.Namespace.Equal(prior.Namespace) && kindOf(prior) == KindPVC && kindOf(&plan) == KindPVC {
		for _, p := range []struct {
			path     tfpath.Path
			old, new types.String
		}{{tfpath.Root("storage_class"), prior.StorageClass, plan.StorageClass}, {pAccess, prior.AccessMode, plan.AccessMode}} {
			if !object.Known(p.new) || p.new.Equal(p.old) {
				continue
			}
			if prior.RetainOnDestroy.ValueBool() {
				resp.Diagnostics.AddAttributeError(p.path, "Replacing a retained claim",
					fmt.Sprintf("%s: changing %s from %s to %s replaces the claim %s/%s, but retain_on_destroy = true keeps the old claim, "+
						"and a new one of the same name cannot be created beside it. Give the store a new name, or set "+
						"retain_on_destroy = false and apply first (the checkpoints are then deleted).",
						p.path, p.path, p.old, p.new, prior.Namespace.ValueString(), prior.Name.ValueString()))
				return
			}
			resp.RequiresReplace = append(resp.RequiresReplace, p.path)
		}
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// planStore fills in the defaults of the store's kind and the computed
// outputs, and refuses what only the prior state can tell (shrinking).
func planStore(plan, config *storeModel, prior *storeModel) diag.Diagnostics {
	var diags diag.Diagnostics
	name := plan.Name.ValueString()
	if kindOf(plan) == KindObjectStore {
		plan.AccessMode, plan.MountPath, plan.StorageClass = types.StringNull(), types.StringNull(), types.StringNull()
		plan.ClaimName = types.StringNull()
		plan.ConfigMapName = types.StringValue(name)
		plan.Env = types.MapUnknown(types.StringType)
		if object.Known(plan.URI) && !plan.Endpoint.IsUnknown() {
			s := resolveStore(plan)
			plan.Env = envValue(s.env())
		}
		return diags
	}
	plan.ConfigMapName = types.StringNull()
	plan.ClaimName = types.StringValue(name)
	if config.AccessMode.IsNull() {
		plan.AccessMode = types.StringValue(AccessRWX)
	}
	if config.MountPath.IsNull() {
		plan.MountPath = types.StringValue(DefaultMountPath)
	}
	if config.StorageClass.IsNull() {
		plan.StorageClass = types.StringUnknown()
		if prior != nil && kindOf(prior) == KindPVC && object.Known(prior.StorageClass) {
			plan.StorageClass = prior.StorageClass
		}
	}
	plan.Env = types.MapUnknown(types.StringType)
	if object.Known(plan.MountPath) {
		plan.Env = envValue(map[string]string{EnvDir: plan.MountPath.ValueString()})
	}
	if object.Known(plan.AccessMode) && plan.AccessMode.ValueString() == AccessRWO {
		diags.AddAttributeWarning(pAccess, "A ReadWriteOnce checkpoint claim",
			"a ReadWriteOnce claim is mounted by the pods of one node only: the nodes of a multi-node job cannot share it, "+
				"and a job whose pods land on two nodes stays Pending. Use it for single-node jobs only.")
	}
	if plan.Backup != nil {
		b, cb := plan.Backup, config.Backup
		b.ClaimName = types.StringValue(backupName(name))
		if cb == nil || cb.Retention.IsNull() {
			b.Retention = types.Int64Value(DefaultRetention)
		}
		if cb == nil || cb.Image.IsNull() {
			b.Image = types.StringValue(DefaultBackupImage)
		}
		if cb == nil || cb.Size.IsNull() {
			b.Size = types.StringUnknown()
			if object.Known(plan.Size) && object.Known(b.Retention) {
				if q, err := validators.ParseQuantity(plan.Size.ValueString()); err == nil {
					b.Size = types.StringValue(kresource.NewQuantity(q.Value()*b.Retention.ValueInt64(), kresource.BinarySI).String())
				}
			}
			if prior != nil && prior.Backup != nil && object.Known(prior.Backup.Size) && object.Known(b.Size) {
				if same(prior.Backup.Size, b.Size) {
					b.Size = prior.Backup.Size // the server's spelling
				}
			}
		}
	}
	if prior == nil || kindOf(prior) != KindPVC || !plan.Name.Equal(prior.Name) || !plan.Namespace.Equal(prior.Namespace) {
		return diags
	}
	diags.Append(noShrink(pSize, prior.Size, plan.Size)...)
	if plan.Backup != nil && prior.Backup != nil {
		diags.Append(noShrink(pBackupSz, prior.Backup.Size, plan.Backup.Size)...)
	}
	return diags
}

func same(a, b types.String) bool {
	qa, ea := validators.ParseQuantity(a.ValueString())
	qb, eb := validators.ParseQuantity(b.ValueString())
	return ea == nil && eb == nil && qa.Cmp(qb) == 0
}

// noShrink refuses a smaller claim: Kubernetes only expands claims.
func noShrink(p tfpath.Path, old, planned types.String) diag.Diagnostics {
	var diags diag.Diagnostics
	if !object.Known(old) || !object.Known(planned) {
		return diags
	}
	qo, eo := validators.ParseQuantity(old.ValueString())
	qn, en := validators.ParseQuantity(planned.ValueString())
	if eo == nil && en == nil && qn.Cmp(qo) < 0 {
		diags.AddAttributeError(p, "Claims cannot shrink",
			fmt.Sprintf("the claim is %s and %s is %s: Kubernetes only expands claims. Keep %s at least %s, or move the "+
				"checkpoints to a new store (a new name).", old.ValueString(), p, planned.ValueString(), p, old.ValueString()))
	}
	return diags
}

func keepText(m *storeModel) string {
	ref := m.Namespace.ValueString() + "/" + m.Name.ValueString()
	text := fmt.Sprintf("retain_on_destroy = true: the PersistentVolumeClaim %s and the checkpoints in it are kept", ref)
	if m.Backup != nil {
		text += fmt.Sprintf(", and so is the backup claim %s/%s (its backup CronJob is deleted)", m.Namespace.ValueString(), backupName(m.Name.ValueString()))
	}
	return text + ". They are no longer managed by Terraform; applying the same store again adopts them. Delete them with " +
		fmt.Sprintf("`kubectl delete pvc -n %s %s` once the checkpoints are not needed.", m.Namespace.ValueString(), m.Name.ValueString())
}

// connected is ready for a refresh: without a client the recorded state is
// kept, with a warning.
func (r *checkpointStore) connected(diags *diag.Diagnostics) bool {
	if r.client == nil {
		object.NotConnected(diags, true)
		return false
	}
	return true
}

func (r *checkpointStore) ready(diags *diag.Diagnostics) bool {
	if r.client == nil {
		object.NotConnected(diags, false)
		return false
	}
	return true
}

func (r *checkpointStore) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	r.write(ctx, req.Plan, nil, &resp.State, &resp.Diagnostics)
}

func (r *checkpointStore) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var prior storeModel
	if resp.Diagnostics.Append(req.State.Get(ctx, &prior)...); resp.Diagnostics.HasError() {
		return
	}
	r.write(ctx, req.Plan, &prior, &resp.State, &resp.Diagnostics)
}

type planGetter interface {
	Get(context.Context, any) diag.Diagnostics
}

type stateSetter interface {
	Set(context.Context, any) diag.Diagnostics
}

func (r *checkpointStore) write(ctx context.Context, plan planGetter, prior *storeModel, state stateSetter, diags *diag.Diagnostics) {
	var m storeModel
	if diags.Append(plan.Get(ctx, &m)...); diags.HasError() || !r.ready(diags) {
		return
	}
	s := resolveStore(&m)
	m.SetObjectRef(s.ref())
	apply := func(k kube.Kind, name string, fields map[string]any) map[string]any {
		ref := kube.Ref{Namespace: s.Namespace, Name: name}
		live, err := r.client.Apply(ctx, k, kube.NewObject(k, ref, fields))
		if err != nil {
			diags.AddError(fmt.Sprintf("Applying %s %s failed", k.Kind, ref), err.Error())
			return nil
		}
		return live.Object
	}
	if s.Kind == KindObjectStore {
		if apply(configMapKind, s.Name, s.configMap()) == nil {
			return
		}
		diags.Append(state.Set(ctx, &m)...)
		return
	}
	live := apply(claimKind, s.Name, s.claim())
	if live == nil {
		return
	}
	class, _ := object.Field(live, "spec", "storageClassName").(string)
	if m.StorageClass.IsUnknown() {
		m.StorageClass = object.String(class, m.StorageClass)
	}
	if s.Backup != nil {
		if apply(claimKind, s.Backup.ClaimName, s.backupClaim(class)) == nil {
			diags.Append(state.Set(ctx, &m)...) // the claim exists; Terraform taints the store
			return
		}
		if apply(cronJobKind, backupName(s.Name), s.cronJob()) == nil {
			diags.Append(state.Set(ctx, &m)...)
			return
		}
	} else if prior != nil && prior.Backup != nil {
		diags.Append(r.dropBackup(ctx, s.ref(), s.Retain)...)
		if diags.HasError() {
			return
		}
	}
	diags.Append(state.Set(ctx, &m)...)
}

// dropBackup deletes the backup CronJob, and the backup claim unless kept.
func (r *checkpointStore) dropBackup(ctx context.Context, ref kube.Ref, retain bool) diag.Diagnostics {
	var diags diag.Diagnostics
	if _, bounded := ctx.Deadline(); !bounded { // an update; a destroy runs under timeouts.delete
		var cancel context.CancelFunc
		ctx, cancel = object.WithBudget(ctx, "update", deleteTimeout)
		defer cancel()
	}
	b := kube.Ref{Namespace: ref.Namespace, Name: backupName(ref.Name)}
	if err := r.client.Delete(ctx, cronJobKind, b); err != nil {
		diags.AddError(fmt.Sprintf("Deleting the backup CronJob %s failed", b), object.Explain(ctx, err))
		return diags
	}
	if retain {
		diags.AddWarning("Backup claim kept", fmt.Sprintf("retain_on_destroy = true: the backup claim %s and its backups are kept; "+
			"delete it with `kubectl delete pvc -n %s %s` once they are not needed.", b, b.Namespace, b.Name))
		return diags
	}
	if err := r.client.Delete(ctx, claimKind, b); err != nil {
		diags.AddError(fmt.Sprintf("Deleting the backup claim %s failed", b), object.Explain(ctx, err))
	}
	return diags
}

func (r *checkpointStore) get(ctx context.Context, k kube.Kind, ref kube.Ref, diags *diag.Diagnostics) map[string]any {
	live, found, err := r.client.Get(ctx, k, ref)
	if err != nil {
		diags.AddError(fmt.Sprintf("Reading %s %s failed", k.Kind, ref), err.Error())
		return nil
	}
	if !found {
		return nil
	}
	return live.Object
}

// ours: the object was made by a checkpoint store of that name.
func ours(live map[string]any, name string) bool {
	return live != nil && object.Fields(live, "metadata", "labels")[LabelStore] == name
}

func (r *checkpointStore) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m storeModel
	if resp.Diagnostics.Append(req.State.Get(ctx, &m)...); resp.Diagnostics.HasError() || !r.connected(&resp.Diagnostics) {
		return
	}
	ref := m.ObjectRef()
	importing := m.Kind.IsNull()
	kind := kindOf(&m)
	var claim, cm map[string]any
	if importing || kind == KindPVC {
		claim = r.get(ctx, claimKind, ref, &resp.Diagnostics)
		if importing && !ours(claim, ref.Name) {
			claim = nil
		}
	}
	if claim == nil && (importing || kind == KindObjectStore) {
		cm = r.get(ctx, configMapKind, ref, &resp.Diagnostics)
		if importing && !ours(cm, ref.Name) {
			cm = nil
		}
	}
	if resp.Diagnostics.HasError() {
		return
	}
	switch {
	case claim != nil:
		if importing {
			m.RetainOnDestroy = types.BoolNull()
		}
		readClaim(claim, &m, importing)
		b := kube.Ref{Namespace: ref.Namespace, Name: backupName(ref.Name)}
		cron := r.get(ctx, cronJobKind, b, &resp.Diagnostics)
		var bclaim map[string]any
		if cron != nil {
			bclaim = r.get(ctx, claimKind, b, &resp.Diagnostics)
		}
		readBackup(cron, bclaim, &m)
	case cm != nil:
		readConfigMap(cm, &m, importing)
	case importing:
		resp.Diagnostics.AddError("Checkpoint store not found", fmt.Sprintf("Neither a PersistentVolumeClaim nor a ConfigMap %s "+
			"carries the label %s=%s: there is no checkpoint store of that name, or it was not made by aiplatform_checkpoint_store.",
			ref, LabelStore, ref.Name))
		return
	default:
		// Deleted out of band: forget it so the plan creates it again.
		resp.State.RemoveResource(ctx)
		return
	}
	if resp.Diagnostics.HasError() {
		return
	}
	m.SetObjectRef(ref)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *checkpointStore) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m storeModel
	if resp.Diagnostics.Append(req.State.Get(ctx, &m)...); resp.Diagnostics.HasError() || !r.ready(&resp.Diagnostics) {
		return
	}
	d, ds := object.TimeoutFor(ctx, m.Timeouts, "delete", deleteTimeout)
	resp.Diagnostics.Append(ds...)
	ctx, cancel := object.WithBudget(ctx, "delete", d)
	defer cancel()
	ref := m.ObjectRef()
	if kindOf(&m) == KindObjectStore {
		if err := r.client.Delete(ctx, configMapKind, ref); err != nil {
			resp.Diagnostics.AddError(fmt.Sprintf("Deleting ConfigMap %s failed", ref), object.Explain(ctx, err))
		}
		return
	}
	retain := m.RetainOnDestroy.ValueBool()
	if m.Backup != nil {
		d := r.dropBackup(ctx, ref, retain)
		if resp.Diagnostics.Append(d.Errors()...); d.HasError() {
			return
		}
	}
	if retain {
		resp.Diagnostics.AddWarning("Checkpoint claim kept", keepText(&m))
		return
	}
	if err := r.client.Delete(ctx, claimKind, ref); err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Deleting PersistentVolumeClaim %s failed", ref), object.Explain(ctx, err))
	}
}

func (r *checkpointStore) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	object.ImportRef(ctx, req, resp, true)
}
