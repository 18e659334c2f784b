package serving

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
)

// The import report of a preset (object.Spec.ImportReport), as a
// runtime's: the pod fields the generated configuration carries in
// template.pod_template, and what it cannot express — a multi-node
// `worker` or a `prefill` pool of KServe's own presets, tracing, the
// preset's own labels — which an apply leaves to the manager that set them.

func presetImportReport(live map[string]any, m *presetModel) (carried, lost []string) {
	if m.Template != nil && object.Known(m.Template.PodTemplate) {
		if doc, err := podtemplate.Decode[corev1.PodTemplateSpec](m.Template.PodTemplate.ValueString()); err == nil {
			for _, p := range podtemplate.Paths(doc) {
				carried = append(carried, "spec."+strings.TrimPrefix(strings.TrimPrefix(p, "spec."), "metadata."))
			}
		}
	}
	written := kube.NewObject(LLMServiceConfigKind, m.ObjectRef(), presetFields(m)).Object
	for _, p := range object.Uncovered(object.Settable(live), written, func(p string) bool { return p == "spec.template" }) {
		switch p {
		case object.FieldPath("metadata.annotations", "kubectl.kubernetes.io/last-applied-configuration"):
		default:
			lost = append(lost, p)
		}
	}
	return carried, lost
}
