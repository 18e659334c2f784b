package modelcache

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	tfpath "github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// Plan: the configuration resolved into a spec, the warm-up key, and what
// ModifyPlan computes and checks against the live cluster.

// downloaderOf returns the configured downloader with the scheme's defaults
// for whatever is null or unknown; ok is false when the URI is not known yet.
func downloaderOf(ctx context.Context, m *cacheModel) (Downloader, bool) {
	if m.Source == nil || !object.Known(m.Source.URI) {
		return Downloader{}, false
	}
	src, err := ParseSource(m.Source.URI.ValueString())
	if err != nil {
		return Downloader{}, false
	}
	def := DefaultDownloader(src.Scheme)
	if !object.Known(m.Downloader) {
		return def, true
	}
	var d downloaderModel
	if m.Downloader.As(ctx, &d, basetypes.ObjectAsOptions{UnhandledNullAsEmpty: true, UnhandledUnknownAsEmpty: true}) != nil {
		return def, true
	}
	out := def
	if object.Known(d.Image) {
		out.Image = d.Image.ValueString()
	}
	if !d.Command.IsUnknown() && !d.Command.IsNull() {
		out.Command = object.ListStrings(d.Command)
	}
	if !d.Args.IsUnknown() && !d.Args.IsNull() {
		out.Args = object.ListStrings(d.Args)
	}
	return out, true
}

func downloaderValue(d Downloader) types.Object {
	return types.ObjectValueMust(downloaderTypes, map[string]attr.Value{
		"image": types.StringValue(d.Image), "command": object.ListValue(d.Command), "args": object.ListValue(d.Args),
	})
}

func defaultHostPath(m *cacheModel) string {
	return DefaultHostRoot + "/" + m.Namespace.ValueString() + "/" + m.Name.ValueString()
}

// resolve turns a fully known plan (or state) into a spec.
func resolve(ctx context.Context, m *cacheModel) (*spec, diag.Diagnostics) {
	var diags diag.Diagnostics
	if m.Source == nil {
		diags.AddAttributeError(pSource, "Missing source", "the cache has no source")
		return nil, diags
	}
	src, err := ParseSource(m.Source.URI.ValueString())
	if err != nil {
		diags.AddAttributeError(pURI, "Unsupported model source", err.Error())
		return nil, diags
	}
	timeout, err := parseTimeout(m.Timeout.ValueString())
	if err != nil {
		diags.AddAttributeError(tfpath.Root("timeout"), "Invalid timeout", err.Error())
		return nil, diags
	}
	d, _ := downloaderOf(ctx, m)
	s := &spec{
		Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString(),
		Mode:              m.Mode.ValueString(),
		Source:            src,
		Revision:          m.Source.Revision.ValueString(),
		EffectiveRevision: src.EffectiveRevision(m.Source.Revision.ValueString()),
		Downloader:        d,
		MountPath:         m.MountPath.ValueString(),
		HostPath:          m.HostPath.ValueString(),
		NodeSelector:      object.Strings(m.NodeSelector),
		PodAnnotations:    object.Strings(m.PodAnnotations),
		BackoffLimit:      m.BackoffLimit.ValueInt64(),
		Timeout:           timeout,
		TimeoutText:       m.Timeout.ValueString(),
		Size:              m.Size.ValueString(),
		StorageClass:      m.StorageClass.ValueString(),
		AccessModes:       object.ListStrings(m.AccessModes),
		RetainOnDestroy:   m.RetainOnDestroy.ValueBool(),
	}
	if m.Source.SecretRef != nil {
		s.SecretRef = m.Source.SecretRef.Name.ValueString()
	}
	s.SubPath = SubPath(src.URI, s.EffectiveRevision)
	if s.Mode == ModePVC && len(s.AccessModes) == 0 {
		s.AccessModes = DefaultAccessModes
	}
	return s, diags
}

// planKey is the warm-up key of a model (see spec.key), "" when not known.
func planKey(m *cacheModel) string {
	if m.Source == nil || !object.Known(m.Source.URI) || m.Source.Revision.IsUnknown() || !object.Known(m.SubPath) {
		return ""
	}
	if m.Mode.ValueString() == ModeNodeLocal {
		if !object.Known(m.HostPath) {
			return ""
		}
		return m.SubPath.ValueString() + "@" + m.HostPath.ValueString()
	}
	return m.SubPath.ValueString()
}

// warmedIn reports whether state holds a completed warm-up.
func warmedIn(m *cacheModel) bool { return m != nil && m.Source != nil && object.Known(m.WarmedAt) }

func (r *modelCache) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	var plan cacheModel
	if d := req.Plan.Get(ctx, &plan); d.HasError() {
		return // whole objects unknown until apply
	}
	var config cacheModel
	if d := req.Config.Get(ctx, &config); d.HasError() {
		return
	}
	var state *cacheModel
	if !req.State.Raw.IsNull() {
		state = &cacheModel{}
		if d := req.State.Get(ctx, state); d.HasError() {
			resp.Diagnostics.Append(d...)
			return
		}
	}
	if object.Known(plan.Namespace) && object.Known(plan.Name) {
		plan.ID = types.StringValue(plan.Namespace.ValueString() + "/" + plan.Name.ValueString())
		if config.MountPath.IsNull() {
			plan.MountPath = types.StringValue(DefaultMountRoot + "/" + plan.Name.ValueString())
		}
	}
	mode := plan.Mode.ValueString()
	sameMode := state != nil && state.Mode.ValueString() == mode
	switch mode {
	case ModePVC:
		if object.Known(plan.Name) {
			plan.ClaimName = plan.Name
		}
		if config.AccessModes.IsNull() {
			plan.AccessModes = object.ListValue(DefaultAccessModes)
		}
		if plan.StorageClass.IsUnknown() && config.StorageClass.IsNull() && sameMode && object.Known(state.StorageClass) {
			plan.StorageClass = state.StorageClass // the class the server defaulted
		}
		plan.HostPath = types.StringNull()
	case ModeNodeLocal:
		plan.ClaimName = types.StringNull()
		if config.AccessModes.IsNull() {
			plan.AccessModes = types.ListNull(types.StringType)
		}
		if config.StorageClass.IsNull() {
			plan.StorageClass = types.StringNull()
		}
		if config.HostPath.IsNull() && object.Known(plan.Namespace) && object.Known(plan.Name) {
			plan.HostPath = types.StringValue(defaultHostPath(&plan))
		}
		resp.Diagnostics.Append(r.warnEmptyPool(ctx, &plan)...)
	}
	// Null in the configuration means the default, whatever state holds
	// (a live object edited out of band shows as a change back).
	withDefaults := config
	withDefaults.Source = plan.Source
	if d, ok := downloaderOf(ctx, &withDefaults); ok {
		plan.Downloader = downloaderValue(d)
	}
	if plan.Source != nil && object.Known(plan.Source.URI) && !plan.Source.Revision.IsUnknown() {
		if src, err := ParseSource(plan.Source.URI.ValueString()); err == nil {
			rev := src.EffectiveRevision(plan.Source.Revision.ValueString())
			plan.SubPath = types.StringValue(SubPath(src.URI, rev))
			plan.WarmedRevision = types.StringValue(rev)
		}
	}
	var replace tfpath.Paths
	if state != nil && sameMode && mode == ModePVC {
		replace = claimReplacements(&plan, &config, state)
	}
	replaced := len(replace) > 0 || (state != nil && (!sameMode || state.ID.ValueString() != plan.ID.ValueString()))
	// What is warmed stays as it is unless the plan fetches something else
	// (or a new claim or DaemonSet is warmed from scratch).
	if key := planKey(&plan); key != "" && !replaced && warmedIn(state) && key == planKey(state) {
		plan.WarmedRevision, plan.WarmedAt, plan.SizeBytes = state.WarmedRevision, state.WarmedAt, state.SizeBytes
	} else {
		plan.WarmedAt, plan.SizeBytes = types.StringUnknown(), types.Int64Unknown()
	}

	resp.RequiresReplace.Append(replace...)
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// claimReplacements are the claim's attributes whose change replaces it:
// size, class and access modes are fixed once a claim is bound.
func claimReplacements(plan, config, state *cacheModel) tfpath.Paths {
	var out tfpath.Paths
	if object.Known(plan.Size) && object.Known(state.Size) {
		p, err1 := validators.ParseQuantity(plan.Size.ValueString())
		s, err2 := validators.ParseQuantity(state.Size.ValueString())
		if err1 != nil || err2 != nil || p.Cmp(s) != 0 {
			out = append(out, tfpath.Root("size"))
		}
	}
	if object.Known(config.StorageClass) && object.Known(state.StorageClass) && config.StorageClass.ValueString() != state.StorageClass.ValueString() {
		out = append(out, tfpath.Root("storage_class"))
	}
	if object.Known(plan.AccessModes) && object.Known(state.AccessModes) {
		a, b := object.ListStrings(plan.AccessModes), object.ListStrings(state.AccessModes)
		sort.Strings(a)
		sort.Strings(b)
		if strings.Join(a, ",") != strings.Join(b, ",") {
			out = append(out, tfpath.Root("access_modes"))
		}
	}
	return out
}

func (r *modelCache) warnEmptyPool(ctx context.Context, m *cacheModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if r.client == nil || !object.Known(m.NodeSelector) {
		return diags
	}
	nodes, err := r.client.Nodes(ctx)
	if err != nil {
		return diags // the apply reports an unreachable cluster
	}
	if len(capacity.Select(nodes, object.Strings(m.NodeSelector))) == 0 {
		diags.AddAttributeWarning(tfpath.Root("node_selector"), "No node to warm",
			"node_selector: no node matches it now, so the DaemonSet has no pod and the apply will not wait for any warm-up. "+
				"Nodes that join the pool later are warmed by the DaemonSet as they arrive.")
	}
	return diags
}

func (r *modelCache) ready(diags *diag.Diagnostics) bool {
	if r.client == nil {
		object.NotConnected(diags, false)
		return false
	}
	return true
}

// checkReferences fails early, naming the attribute, instead of a pod stuck
// in CreateContainerConfigError (no Secret) or Pending (a claim of a class
// that does not exist) until the timeout.
func (r *modelCache) checkReferences(ctx context.Context, s *spec, creating bool) diag.Diagnostics {
	var diags diag.Diagnostics
	if creating && s.Mode == ModePVC && s.StorageClass != "" {
		found, err := r.client.StorageClassExists(ctx, s.StorageClass)
		switch {
		case err != nil:
			diags.AddAttributeError(tfpath.Root("storage_class"), "Cannot read the StorageClass", err.Error())
		case !found:
			diags.AddAttributeError(tfpath.Root("storage_class"), "The StorageClass does not exist",
				fmt.Sprintf("storage_class: there is no StorageClass %q; the claim would stay Pending until the timeout", s.StorageClass))
		}
	}
	if s.SecretRef == "" {
		return diags
	}
	found, err := r.client.SecretExists(ctx, kube.Ref{Namespace: s.Namespace, Name: s.SecretRef})
	switch {
	case err != nil:
		diags.AddAttributeError(pSource.AtName("secret_ref"), "Cannot read the source's Secret", err.Error())
	case !found:
		diags.AddAttributeError(pSource.AtName("secret_ref"), "The source's Secret does not exist",
			fmt.Sprintf("source.secret_ref: there is no Secret %q in namespace %q; the downloader would wait for it until the timeout", s.SecretRef, s.Namespace))
	}
	return diags
}
