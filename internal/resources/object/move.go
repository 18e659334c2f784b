package object

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// Adoption from hashicorp/kubernetes: a `moved { from = kubernetes_manifest.x
// to = aiplatform_<type>.y }` block hands this resource the manifest's state.
// The move records only which object it is — id, name, namespace, as an
// import does — and Terraform's refresh of the moved resource then reads every
// attribute from the live object (Spec.Read with a null prior state, the
// import path), so the object is neither recreated nor written by the move.

var _ resource.ResourceWithMoveState = (*Resource[assertModel, *assertModel])(nil)

// SourceKubernetes is the provider whose kubernetes_manifest resources can
// be moved; any registry host (registry.terraform.io, registry.opentofu.org).
const SourceKubernetes = "hashicorp/kubernetes"

func (r *Resource[T, P]) MoveState(context.Context) []resource.StateMover {
	return []resource.StateMover{{StateMover: func(ctx context.Context, req resource.MoveStateRequest, resp *resource.MoveStateResponse) {
		if req.SourceTypeName != "kubernetes_manifest" || !FromProvider(req.SourceProviderAddress, SourceKubernetes) {
			return // not ours: the framework reports that nothing could move it
		}
		ref, diags := ManifestRef(req.SourceRawState, r.spec.Kind)
		if resp.Diagnostics.Append(diags...); diags.HasError() {
			return
		}
		resp.Diagnostics.Append(SetRef(ctx, &resp.TargetState, ref, r.spec.Kind.Namespaced)...)
	}}}
}

// FromProvider reports whether a provider address (host/namespace/type)
// names want ("namespace/type") on any registry host.
func FromProvider(addr, want string) bool {
	return addr == want || strings.HasSuffix(addr, "/"+want)
}

// SetRef sets id, name and (when namespaced) namespace in a state that is
// otherwise null: what an import by ID records before Read fills the rest.
func SetRef(ctx context.Context, st settable, ref kube.Ref, namespaced bool) diag.Diagnostics {
	var diags diag.Diagnostics
	diags.Append(st.SetAttribute(ctx, path.Root("id"), ref.String())...)
	diags.Append(st.SetAttribute(ctx, path.Root("name"), ref.Name)...)
	if namespaced {
		diags.Append(st.SetAttribute(ctx, path.Root("namespace"), ref.Namespace)...)
	}
	return diags
}

type settable interface {
	SetAttribute(ctx context.Context, p path.Path, v any) diag.Diagnostics
}

// ManifestRef reads which object a kubernetes_manifest state describes and
// checks that it is of kind k. The manifest's `object` (what the server
// returned) is preferred, else its `manifest`; both are dynamic values,
// which the state JSON holds either plainly or as {"value": …, "type": …}.
func ManifestRef(raw *tfprotov6.RawState, k kube.Kind) (kube.Ref, diag.Diagnostics) {
	var diags diag.Diagnostics
	fail := func(detail string) (kube.Ref, diag.Diagnostics) {
		diags.AddError("Cannot move kubernetes_manifest to this resource", detail)
		return kube.Ref{}, diags
	}
	if raw == nil || len(raw.JSON) == 0 {
		return fail("The source state is empty (only states written as JSON, Terraform ≥ 0.12, can be moved).")
	}
	var attrs map[string]json.RawMessage
	if err := json.Unmarshal(raw.JSON, &attrs); err != nil {
		return fail("The source state is not a JSON object: " + err.Error())
	}
	var obj manifest
	for _, key := range []string{"object", "manifest"} {
		if m, ok := dynamicObject(attrs[key]); ok && m.Kind != "" {
			obj = m
			break
		}
	}
	if obj.Kind == "" {
		return fail("The source state has neither an `object` nor a `manifest` with apiVersion and kind.")
	}
	group, _, _ := strings.Cut(obj.APIVersion, "/")
	if !strings.Contains(obj.APIVersion, "/") {
		group = "" // core/v1
	}
	if obj.Kind != k.Kind || group != k.Group {
		return fail(fmt.Sprintf("The manifest is a %s (%s); this resource manages %s objects of group %s. Move it to the aiplatform resource of its kind, or keep it in hashicorp/kubernetes.",
			obj.Kind, obj.APIVersion, k.Kind, k.Group))
	}
	ref := kube.Ref{Name: obj.Metadata.Name}
	if k.Namespaced {
		ref.Namespace = obj.Metadata.Namespace
		if ref.Namespace == "" {
			ref.Namespace = "default" // as kubernetes_manifest applies a namespaced object without one
		}
	}
	if ref.Name == "" {
		return fail("The manifest has no metadata.name (generateName is not supported).")
	}
	return ref, diags
}

type manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// dynamicObject decodes a dynamic attribute's JSON, with or without the
// {"value", "type"} wrapper Terraform uses for dynamic values in state.
func dynamicObject(b json.RawMessage) (manifest, bool) {
	var m manifest
	if len(b) == 0 || string(b) == "null" {
		return m, false
	}
	var wrapped struct {
		Value json.RawMessage `json:"value"`
		Type  json.RawMessage `json:"type"`
	}
	if json.Unmarshal(b, &wrapped) == nil && len(wrapped.Type) > 0 && len(wrapped.Value) > 0 {
		b = wrapped.Value
	}
	if json.Unmarshal(b, &m) != nil {
		return m, false
	}
	return m, true
}
