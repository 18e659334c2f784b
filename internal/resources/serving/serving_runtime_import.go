package serving

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
)

// The import report of a runtime (object.Spec.ImportReport), as an LWS
// group's: the pod fields the generated configuration carries in
// template.pod_template, and the fields it cannot express at all (a
// multi-node workerSpec, ModelMesh's adapter and endpoints, the object's own
// labels), which an apply leaves to the manager that set them.

// runtimeTyped are the spec fields the attributes write besides the pod.
var runtimeTyped = map[string]bool{"supportedModelFormats": true, "protocolVersions": true, "multiModel": true, "disabled": true,
	"labels": true, "annotations": true}

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
				lost = append(lost, object.FieldPath("metadata."+k, key))
			}
		}
	}
	sort.Strings(carried)
	sort.Strings(lost)
	return carried, lost
}
