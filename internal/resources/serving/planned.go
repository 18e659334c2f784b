package serving

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/planned"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/rules"
)

// What the serving groups and inference pools record in the run's plan
// registry (internal/planned) for the checks across resources
// (internal/rules), and what those checks find when they are planned.

// podLabels are the labels a template gives its pods; ok is false while
// they are unknown until apply.
func podLabels(t *podtemplate.Template) (map[string]string, bool) {
	if t == nil {
		return map[string]string{}, true
	}
	if t.Labels.IsUnknown() || t.PodTemplate.IsUnknown() {
		return nil, false
	}
	out := map[string]string{}
	for k, v := range object.Fields(t.Object(), "metadata", "labels") {
		out[k], _ = v.(string)
	}
	return out, true
}

// planServingGroup records a serving group's pod labels.
func planServingGroup(ctx context.Context, c *kube.Client, kind string, meta object.NamespacedMeta, labels map[string]string) diag.Diagnostics {
	if c == nil || !object.Known(meta.Namespace) || !object.Known(meta.Name) {
		return nil
	}
	return rules.Plan(ctx, c, planned.ServingGroup{Kind: kind, Namespace: meta.Namespace.ValueString(), Name: meta.Name.ValueString(), PodLabels: labels})
}

// planLWSPods records the pod labels of an LWS group's workers (with the
// label LWS's controller adds to every pod of the group).
func planLWSPods(ctx context.Context, c *kube.Client, m *lwsGroupModel) diag.Diagnostics {
	var t *podtemplate.Template
	if m.Worker != nil {
		t = &m.Worker.Template
	}
	labels, ok := podLabels(t)
	if !ok {
		return nil
	}
	labels[catalog.LWSNameLabel] = m.Name.ValueString()
	return planServingGroup(ctx, c, catalog.LWSKind.Kind, m.NamespacedMeta, labels)
}

// planDeploymentPods records the pod labels of a model deployment.
func planDeploymentPods(ctx context.Context, c *kube.Client, m *modelDeploymentModel) diag.Diagnostics {
	labels, ok := podLabels(m.Template)
	if !ok || m.QueueName.IsUnknown() {
		return nil
	}
	labels[deploySelectorLabel] = m.Name.ValueString()
	if object.Known(m.QueueName) {
		labels[catalog.KueueQueueLabel] = m.QueueName.ValueString()
	}
	return planServingGroup(ctx, c, catalog.Deployment.Kind, m.NamespacedMeta, labels)
}

// inferencePoolFact is what an inference pool records.
func inferencePoolFact(m *inferencePoolModel) planned.InferencePool {
	p := planned.InferencePool{Namespace: m.Namespace.ValueString(), Name: m.Name.ValueString(), Selector: object.Labels(m.Selector)}
	if g := m.ServingGroup; g != nil && object.Known(g.Kind) && object.Known(g.Name) {
		p.GroupKind, p.GroupName = g.Kind.ValueString(), g.Name.ValueString()
		if object.Known(g.Labels) {
			p.GroupLabels = object.Labels(g.Labels)
		}
	}
	return p
}

// withPlanned runs a resource's plan, then (when it found no error) records
// what the resource plans and runs the checks across resources.
func withPlanned[T any](plan, record func(context.Context, *kube.Client, *T) diag.Diagnostics) func(context.Context, *kube.Client, *T) diag.Diagnostics {
	return func(ctx context.Context, c *kube.Client, m *T) diag.Diagnostics {
		diags := plan(ctx, c, m)
		if !diags.HasError() {
			diags.Append(record(ctx, c, m)...)
		}
		return diags
	}
}
