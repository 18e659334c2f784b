package modelcache

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// Apply and read: create, update (re-warm), read back from the owning
// object's record, delete and import.

func (m *cacheModel) setWarmed(w *warmed) {
	if w == nil {
		m.WarmedRevision, m.WarmedAt, m.SizeBytes = types.StringNull(), types.StringNull(), types.Int64Null()
		return
	}
	m.WarmedRevision = types.StringValue(w.Revision)
	m.WarmedAt = types.StringValue(w.At)
	m.SubPath = types.StringValue(w.SubPath)
	m.SizeBytes = types.Int64Null()
	if w.SizeBytes != nil {
		m.SizeBytes = types.Int64Value(*w.SizeBytes)
	}
}

func newWarmed(s *spec, o outcome, keep string) *warmed {
	return &warmed{Revision: s.EffectiveRevision, SubPath: s.SubPath, At: time.Now().UTC().Format(time.RFC3339), SizeBytes: o.SizeBytes, Keep: keep}
}

// warmedOf is what state says is warmed.
func warmedOf(m *cacheModel) *warmed {
	if !warmedIn(m) {
		return nil
	}
	w := &warmed{Revision: m.WarmedRevision.ValueString(), SubPath: m.SubPath.ValueString(), At: m.WarmedAt.ValueString()}
	if object.Known(m.SizeBytes) {
		n := m.SizeBytes.ValueInt64()
		w.SizeBytes = &n
	}
	return w
}

// resolveChecked resolves a fully known plan and checks what it references
// in the cluster; nil when either fails.
func (r *modelCache) resolveChecked(ctx context.Context, m *cacheModel, creating bool, diags *diag.Diagnostics) *spec {
	s, d := resolve(ctx, m)
	if diags.Append(d...); diags.HasError() {
		return nil
	}
	if diags.Append(r.checkReferences(ctx, s, creating)...); diags.HasError() {
		return nil
	}
	return s
}

func (r *modelCache) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m cacheModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || !r.ready(&resp.Diagnostics) {
		return
	}
	s := r.resolveChecked(ctx, &m, true, &resp.Diagnostics)
	if s == nil {
		return
	}
	var o outcome
	var err error
	switch s.Mode {
	case ModePVC:
		live, aerr := r.client.ApplyPersistentVolumeClaim(ctx, s.claim(s.record(nil)))
		if aerr != nil {
			resp.Diagnostics.AddError("Creating the model cache's claim failed", aerr.Error())
			return
		}
		if live.Spec.StorageClassName != nil {
			m.StorageClass = types.StringValue(*live.Spec.StorageClassName)
		} else if m.StorageClass.IsUnknown() {
			m.StorageClass = types.StringNull()
		}
		o, err = warmJob(ctx, r.client, s, "")
	case ModeNodeLocal:
		o, err = warmDaemonSet(ctx, r.client, s, "", s.record(nil))
	}
	if err != nil {
		// The objects exist: record them (Terraform marks the cache tainted,
		// so the next apply replaces it), claiming nothing warmed.
		m.setWarmed(nil)
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		resp.Diagnostics.AddError(fmt.Sprintf("Warming model cache %s failed", s.ref()), err.Error())
		return
	}
	w := newWarmed(s, o, "")
	if d := r.record(ctx, s, w, ""); d.HasError() {
		m.setWarmed(nil)
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		resp.Diagnostics.Append(d...)
		return
	}
	m.setWarmed(w)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// record writes the warmed state on the owning object (for node_local the
// template is unchanged, so no pod restarts).
func (r *modelCache) record(ctx context.Context, s *spec, w *warmed, keep string) diag.Diagnostics {
	var diags diag.Diagnostics
	var err error
	switch s.Mode {
	case ModePVC:
		_, err = r.client.ApplyPersistentVolumeClaim(ctx, s.claim(s.record(w)))
	case ModeNodeLocal:
		_, err = r.client.ApplyDaemonSet(ctx, s.daemonSet(keep, s.record(w)))
	}
	if err != nil {
		diags.AddError(fmt.Sprintf("Recording the warmed state of model cache %s failed", s.ref()), err.Error())
	}
	return diags
}

func (r *modelCache) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m, prior cacheModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() || !r.ready(&resp.Diagnostics) {
		return
	}
	s := r.resolveChecked(ctx, &m, false, &resp.Diagnostics)
	if s == nil {
		return
	}
	rewarm := !warmedIn(&prior) || planKey(&prior) != s.key()
	keep := ""
	if rewarm && warmedIn(&prior) && prior.SubPath.ValueString() != s.SubPath {
		keep = prior.SubPath.ValueString()
	}
	w := warmedOf(&prior)
	switch s.Mode {
	case ModePVC:
		if rewarm {
			o, err := warmJob(ctx, r.client, s, keep)
			if err != nil {
				// State keeps the prior revision (Terraform keeps the prior
				// state on error): the next plan proposes this one again.
				resp.Diagnostics.AddError(fmt.Sprintf("Warming model cache %s failed", s.ref()),
					err.Error()+fmt.Sprintf("\n\nThe cache still holds revision %s.", orNone(prior.WarmedRevision)))
				return
			}
			w = newWarmed(s, o, keep)
		}
	case ModeNodeLocal:
		live, found, err := r.client.GetDaemonSet(ctx, s.ref())
		if err != nil {
			resp.Diagnostics.AddError("Reading the model cache's DaemonSet failed", err.Error())
			return
		}
		var liveRec *record
		if found {
			liveRec = readRecord(live.Annotations)
		}
		liveKeep := ""
		if liveRec != nil && liveRec.Warmed != nil {
			liveKeep = liveRec.Warmed.Keep
		}
		if !rewarm {
			keep = liveKeep
		}
		if liveRec == nil {
			liveRec = s.record(nil)
		}
		o, err := warmDaemonSet(ctx, r.client, s, keep, liveRec)
		if err != nil {
			msg := err.Error() + fmt.Sprintf("\n\nThe cache still holds revision %s", orNone(prior.WarmedRevision))
			if ps, d := resolve(ctx, &prior); !d.HasError() && found {
				if _, rerr := r.client.ApplyDaemonSet(ctx, ps.daemonSet(liveKeep, liveRec)); rerr == nil {
					msg += "; the DaemonSet was set back to its previous template"
				} else {
					msg += fmt.Sprintf("; setting the DaemonSet back to its previous template failed: %v", rerr)
				}
			}
			resp.Diagnostics.AddError(fmt.Sprintf("Warming model cache %s failed", s.ref()), msg+".")
			return
		}
		if rewarm {
			w = newWarmed(s, o, keep)
		} else if w != nil {
			w.Keep = keep
		}
	}
	if d := r.record(ctx, s, w, keep); d.HasError() {
		resp.Diagnostics.Append(d...)
		return
	}
	m.setWarmed(w)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func orNone(v types.String) string {
	if !object.Known(v) {
		return "(none)"
	}
	return v.ValueString()
}

func (r *modelCache) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m cacheModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if r.client == nil {
		object.NotConnected(&resp.Diagnostics, true)
		return
	}
	ref := kube.Ref{Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString()}
	importing := m.Mode.IsNull()
	mode := m.Mode.ValueString()
	var pvc *corev1.PersistentVolumeClaim
	var ds *appsv1.DaemonSet
	if importing || mode == ModePVC {
		live, found, err := r.client.GetPersistentVolumeClaim(ctx, ref)
		if err != nil {
			resp.Diagnostics.AddError(fmt.Sprintf("Reading the claim of model cache %s failed", ref), err.Error())
			return
		}
		if found && (!importing || readRecord(live.Annotations) != nil) {
			pvc, mode = live, ModePVC
		}
	}
	if pvc == nil && (importing || mode == ModeNodeLocal) {
		live, found, err := r.client.GetDaemonSet(ctx, ref)
		if err != nil {
			resp.Diagnostics.AddError(fmt.Sprintf("Reading the DaemonSet of model cache %s failed", ref), err.Error())
			return
		}
		if found && (!importing || readRecord(live.Annotations) != nil) {
			ds, mode = live, ModeNodeLocal
		}
	}
	if pvc == nil && ds == nil {
		if importing {
			resp.Diagnostics.AddError("Model cache not found",
				fmt.Sprintf("Neither a PersistentVolumeClaim nor a DaemonSet %s carries the annotation %s: "+
					"there is no model cache of that name, or it was not made by aiplatform_model_cache.", ref, AnnotationConfig))
			return
		}
		// Deleted out of band: forget it so the plan creates it again.
		resp.State.RemoveResource(ctx)
		return
	}
	m.Mode = types.StringValue(mode)
	m.ID = types.StringValue(ref.String())
	if pvc != nil {
		readClaim(ctx, pvc, &m)
	} else {
		readDaemonSet(ctx, ds, &m)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// fromRecord sets the configuration recorded on the owning object. Without a
// completed warm-up there is no source in place: source becomes null, so the
// plan proposes to warm it.
func fromRecord(rec *record, m *cacheModel) {
	if rec == nil {
		m.Source = nil
		m.setWarmed(nil)
		return
	}
	src := &sourceModel{URI: types.StringValue(rec.URI), Revision: types.StringNull()}
	if rec.Revision != nil {
		src.Revision = types.StringValue(*rec.Revision)
	}
	if rec.SecretRef != "" {
		src.SecretRef = &secretRefModel{Name: types.StringValue(rec.SecretRef)}
	}
	m.Source = src
	m.Downloader = downloaderValue(Downloader{Image: rec.Downloader.Image, Command: rec.Downloader.Command, Args: rec.Downloader.Args})
	m.MountPath = types.StringValue(rec.MountPath)
	m.HostPath = types.StringNull()
	if rec.HostPath != "" {
		m.HostPath = types.StringValue(rec.HostPath)
	}
	m.NodeSelector = object.StringMap(rec.NodeSelector, m.NodeSelector)
	m.PodAnnotations = object.StringMap(rec.PodAnnotations, m.PodAnnotations)
	m.BackoffLimit = types.Int64Value(rec.BackoffLimit)
	m.Timeout = types.StringValue(rec.Timeout)
	m.RetainOnDestroy = types.BoolValue(rec.RetainOnDestroy)
	if rec.Warmed == nil {
		m.Source = nil
		m.setWarmed(nil)
		if uri, err := ParseSource(rec.URI); err == nil {
			m.SubPath = types.StringValue(SubPath(rec.URI, uri.EffectiveRevision(src.Revision.ValueString())))
		}
		return
	}
	m.setWarmed(rec.Warmed)
}

func readClaim(_ context.Context, pvc *corev1.PersistentVolumeClaim, m *cacheModel) {
	fromRecord(readRecord(pvc.Annotations), m)
	m.ClaimName = types.StringValue(pvc.Name)
	m.HostPath = types.StringNull()
	m.NodeSelector = types.MapNull(types.StringType)
	if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		m.Size = object.Quantity(q.String(), m.Size)
	} else {
		m.Size = types.StringNull()
	}
	m.StorageClass = types.StringNull()
	if pvc.Spec.StorageClassName != nil {
		m.StorageClass = types.StringValue(*pvc.Spec.StorageClassName)
	}
	modes := make([]string, len(pvc.Spec.AccessModes))
	for i, a := range pvc.Spec.AccessModes {
		modes[i] = string(a)
	}
	m.AccessModes = object.ListValue(modes)
}

// readDaemonSet sets the recorded configuration, then what the live
// DaemonSet says where it can be edited out of band (nodes, downloader,
// directory), so such an edit shows in the plan. (A failed update sets the
// DaemonSet back, so the live template is never a half-applied one.)
func readDaemonSet(_ context.Context, ds *appsv1.DaemonSet, m *cacheModel) {
	fromRecord(readRecord(ds.Annotations), m)
	m.ClaimName, m.Size, m.StorageClass = types.StringNull(), types.StringNull(), types.StringNull()
	m.AccessModes = types.ListNull(types.StringType)
	pod := ds.Spec.Template.Spec
	m.NodeSelector = object.StringMap(pod.NodeSelector, m.NodeSelector)
	for _, v := range pod.Volumes {
		if v.Name == volumeCache {
			if v.HostPath != nil {
				m.HostPath = types.StringValue(v.HostPath.Path)
			} else {
				m.HostPath = types.StringNull()
			}
		}
	}
	d := Downloader{}
	for _, c := range pod.InitContainers {
		if c.Name == containerDownload {
			d = Downloader{Image: c.Image, Command: c.Command, Args: c.Args}
		}
	}
	m.Downloader = downloaderValue(d)
}

func (r *modelCache) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m cacheModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || !r.ready(&resp.Diagnostics) {
		return
	}
	d, ds := object.TimeoutFor(ctx, m.Timeouts, "delete", deleteTimeout)
	resp.Diagnostics.Append(ds...)
	ctx, cancel := object.WithBudget(ctx, "delete", d)
	defer cancel()
	ref := kube.Ref{Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString()}
	if err := r.client.DeleteJobs(ctx, ref.Namespace, LabelName+"="+ref.Name); err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Deleting the warm-up Jobs of model cache %s failed", ref), object.Explain(ctx, err))
		return
	}
	switch m.Mode.ValueString() {
	case ModeNodeLocal:
		if err := r.client.DeleteForeground(ctx, kube.DaemonSetKind, ref); err != nil {
			resp.Diagnostics.AddError(fmt.Sprintf("Deleting the DaemonSet of model cache %s failed", ref), object.Explain(ctx, err))
		}
	default:
		if m.RetainOnDestroy.ValueBool() {
			tflog.Info(ctx, fmt.Sprintf("model cache %s: keeping the claim %s (retain_on_destroy)", ref, ref))
			return
		}
		if err := r.client.Delete(ctx, kube.PersistentVolumeClaimKind, ref); err != nil {
			resp.Diagnostics.AddError(fmt.Sprintf("Deleting the claim of model cache %s failed", ref), object.Explain(ctx, err))
		}
	}
}

func (r *modelCache) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	object.ImportRef(ctx, req, resp, true)
}
