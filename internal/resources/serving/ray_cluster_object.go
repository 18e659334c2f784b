package serving

import (
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// Apply: the RayCluster's fields from the model.

// ---- model → object -------------------------------------------------------

func rayImageOf(m *rayClusterModel) string {
	if object.Known(m.Image) {
		return m.Image.ValueString()
	}
	return rayDefaultImage + m.RayVersion.ValueString()
}

func rayStartParamsOut(m types.Map) map[string]any {
	if p := object.MapOut(m); p != nil {
		return p
	}
	return map[string]any{} // required by the CRD
}

func rayClusterFields(m *rayClusterModel) map[string]any {
	spec := map[string]any{"rayVersion": m.RayVersion.ValueString()}
	h := m.Head
	if h == nil {
		h = &rayHead{}
	}
	head := map[string]any{
		"rayStartParams": rayStartParamsOut(h.RayStartParams),
		"template":       rayPodTemplate(m, &h.rayPod, rayHeadContainer, nil),
	}
	object.Put(head, "serviceType", h.ServiceType)
	spec["headGroupSpec"] = head
	if len(m.WorkerGroups) > 0 {
		groups := make([]any, len(m.WorkerGroups))
		for i, g := range m.WorkerGroups {
			wg := map[string]any{
				"groupName":      g.Name.ValueString(),
				"rayStartParams": rayStartParamsOut(g.RayStartParams),
				"template": rayPodTemplate(m, &m.WorkerGroups[i].rayPod, rayWorkerContainer, map[string]any{
					"nodeSelector": object.MapOut(g.NodeSelector),
					"tolerations":  object.TolerationsToObject(g.Tolerations),
				}),
			}
			object.Put(wg, "replicas", g.Replicas)
			object.Put(wg, "minReplicas", g.MinReplicas)
			object.Put(wg, "maxReplicas", g.MaxReplicas)
			groups[i] = wg
		}
		spec["workerGroupSpecs"] = groups
	}
	if a := m.Autoscaling; a != nil {
		object.Put(spec, "enableInTreeAutoscaling", a.Enabled)
		if d, err := raySeconds(a.IdleTimeout); err == nil && d >= 0 {
			spec["autoscalerOptions"] = map[string]any{"idleTimeoutSeconds": d}
		}
	}
	object.Put(spec, "suspend", m.Suspend)
	fields := map[string]any{"spec": spec}
	if object.Known(m.QueueName) {
		fields["metadata"] = map[string]any{"labels": map[string]any{rayQueueLabel: m.QueueName.ValueString()}}
	}
	return fields
}

// raySeconds parses a duration in whole seconds; -1 and no error when unset.
func raySeconds(s types.String) (int64, error) {
	if !object.Known(s) {
		return -1, nil
	}
	d, err := time.ParseDuration(s.ValueString())
	if err != nil {
		return 0, err
	}
	if d < 0 || d%time.Second != 0 {
		return 0, fmt.Errorf("%q is not a whole, non-negative number of seconds", s.ValueString())
	}
	return int64(d / time.Second), nil
}

// rayDuration spells whole seconds as people write them: "5m", "1h", "90s".
func rayDuration(secs int64) string {
	switch {
	case secs != 0 && secs%3600 == 0:
		return fmt.Sprintf("%dh", secs/3600)
	case secs != 0 && secs%60 == 0:
		return fmt.Sprintf("%dm", secs/60)
	}
	return fmt.Sprintf("%ds", secs)
}
