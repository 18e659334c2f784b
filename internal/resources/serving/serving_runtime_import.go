package serving

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
)

// An import of a runtime tells the truth, as an LWS group's does: the pod
// fields the generated configuration carries in pod_template, and the
// fields it cannot express at all (a multi-node workerSpec, ModelMesh's
// adapter and endpoints, the object's own labels), which an apply leaves to
// the manager that set them.

type servingRuntimeResource struct {
	*object.Scoped
	client *kube.Client
}

var _ resource.ResourceWithImportState = (*servingRuntimeResource)(nil)

func (r *servingRuntimeResource) Configure(ctx context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.Scoped.Configure(ctx, req, resp)
	r.client, _ = req.ProviderData.(*kube.Client)
}

// runtimeTyped are the spec fields the attributes write besides the pod.
var runtimeTyped = map[string]bool{"supportedModelFormats": true, "protocolVersions": true, "multiModel": true, "disabled": true,
	"labels": true, "annotations": true}

func (r *servingRuntimeResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	r.Scoped.ImportState(ctx, req, resp)
	if resp.Diagnostics.HasError() || r.client == nil {
		return
	}
	kind := ClusterServingRuntimeKind
	namespaced := strings.Contains(req.ID, "/")
	if namespaced {
		kind = ServingRuntimeKind
	}
	ref, err := kube.ParseImportID(req.ID, namespaced)
	if err != nil {
		return
	}
	live, found, err := r.client.Get(ctx, kind, ref)
	if err != nil || !found {
		return // the read that follows reports it
	}
	var m servingRuntimeModel
	readServingRuntime(live.Object, &m)
	carried, lost := runtimeImportReport(live.Object, &m)
	if len(carried) == 0 && len(lost) == 0 {
		return
	}
	var b strings.Builder
	if len(carried) > 0 {
		fmt.Fprintf(&b, "No typed attribute expresses these fields; the imported template.pod_template carries them, so the generated configuration reproduces them:\n  %s\n",
			strings.Join(carried, "\n  "))
	}
	if len(lost) > 0 {
		fmt.Fprintf(&b, "The configuration cannot express these fields; an apply leaves them as they are, to the manager that set them:\n  %s\n",
			strings.Join(lost, "\n  "))
	}
	resp.Diagnostics.AddWarning(fmt.Sprintf("Imported %s %s carries fields beyond the typed attributes", kind.Kind, ref), b.String())
}

// runtimeImportReport lists the pod fields m carries in pod_template and
// the fields of the live runtime no attribute carries.
func runtimeImportReport(live map[string]any, m *servingRuntimeModel) (carried, lost []string) {
	if m.Template != nil && object.Known(m.Template.PodTemplate) {
		if doc, err := podtemplate.Decode[corev1.PodTemplateSpec](m.Template.PodTemplate.ValueString()); err == nil {
			for _, p := range podtemplate.Paths(doc) {
				carried = append(carried, "spec."+strings.TrimPrefix(strings.TrimPrefix(p, "spec."), "metadata."))
			}
		}
	}
	for k := range object.Fields(live, "spec") {
		if !runtimePodFields[k] && !runtimeTyped[k] {
			lost = append(lost, "spec."+k)
		}
	}
	for _, k := range []string{"labels", "annotations"} {
		for key := range object.Fields(live, "metadata", k) {
			if key != runtimeSizingAnnotation && key != "kubectl.kubernetes.io/last-applied-configuration" {
				lost = append(lost, fieldPath("metadata."+k, key))
			}
		}
	}
	sort.Strings(carried)
	sort.Strings(lost)
	return carried, lost
}
