package serving

import (
	"context"
	"reflect"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// Apply: the fields about to be applied, adjusted from the live object so
// that an apply changes nothing the plan does not show.

// beforeApplyRayCluster adjusts the fields about to be applied (or
// previewed) from the live object, when there is one: see rayKeepLive and
// keepAutoscalerReplicas. It forces the apply only for the autoscaler.
func beforeApplyRayCluster(_ context.Context, m *rayClusterModel, fields map[string]any, read func() (map[string]any, error)) (bool, error) {
	live, err := read()
	if err != nil || live == nil {
		return false, err
	}
	rayKeepLive(fields, live)
	return keepAutoscalerReplicas(m, fields, live), nil
}

// rayKeepLive leaves the live object as it is where the model only says
// what KubeRay assumes anyway or spells a value differently: a head
// serviceType of ClusterIP and empty rayStartParams are not written where
// the live object leaves them out (KubeRay's samples do), and a request or
// limit the live object spells differently (cpu: 1 for "1", "1000m") keeps
// its live spelling. An empty struct the live object holds where the model
// writes nothing (a worker group's scaleStrategy, a template's metadata) is
// kept: KubeRay 1.6's RayService controller adds its finalizer with a full
// update of the object, which stores them as {} in every group, and
// removing them would change nothing KubeRay reads but would be a live
// change the plan does not show (workerGroupSpecs is an atomic list, so an
// apply replaces each group whole). Worker groups are matched by name.
func rayKeepLive(fields, live map[string]any) {
	spec, lspec := object.Fields(fields, "spec"), object.Fields(live, "spec")
	keep := func(group, lgroup map[string]any) {
		if p, ok := group["rayStartParams"].(map[string]any); ok && len(p) == 0 && lgroup != nil {
			if _, has := lgroup["rayStartParams"]; !has {
				delete(group, "rayStartParams")
			}
		}
		keepEmpty(group, lgroup, "scaleStrategy")
		if tmpl := object.Fields(group, "template"); tmpl != nil {
			keepEmpty(tmpl, object.Fields(lgroup, "template"), "metadata")
		}
		rayKeepSpellings(object.Fields(group, "template"), object.Fields(lgroup, "template"))
	}
	if head, lhead := object.Fields(spec, "headGroupSpec"), object.Fields(lspec, "headGroupSpec"); head != nil {
		if _, has := lhead["serviceType"]; !has && lhead != nil && head["serviceType"] == "ClusterIP" {
			delete(head, "serviceType")
		}
		keep(head, lhead)
	}
	lgroups := map[any]map[string]any{}
	for _, g := range object.Items(lspec, "workerGroupSpecs") {
		lgroups[g["groupName"]] = g
	}
	for _, g := range object.Items(spec, "workerGroupSpecs") {
		keep(g, lgroups[g["groupName"]])
	}
}

// keepEmpty sets fields[key] to {} where live holds an empty struct at key
// and fields nothing.
func keepEmpty(fields, live map[string]any, key string) {
	if _, has := fields[key]; has || live == nil {
		return
	}
	if v, ok := live[key].(map[string]any); ok && len(v) == 0 {
		fields[key] = map[string]any{}
	}
}

// rayKeepSpellings gives the requests and limits of tmpl's containers the
// live template's spelling where they are the same quantity.
func rayKeepSpellings(tmpl, live map[string]any) {
	for _, field := range []string{"containers", "initContainers"} {
		lcs := map[any]map[string]any{}
		for _, c := range object.Items(live, "spec", field) {
			lcs[c["name"]] = c
		}
		for _, c := range object.Items(tmpl, "spec", field) {
			lc := lcs[c["name"]]
			for _, k := range []string{"requests", "limits"} {
				want, have := object.Fields(c, "resources", k), object.Fields(lc, "resources", k)
				for name, v := range want {
					if lv, ok := have[name]; ok && !reflect.DeepEqual(lv, v) && rayQuantityEqual(lv, v) {
						want[name] = lv
					}
				}
			}
		}
	}
}

// keepAutoscalerReplicas: with autoscaling on, KubeRay's autoscaler scales
// each worker group by updating its replicas (and scaleStrategy, the workers
// it removes). workerGroupSpecs is an atomic list in KubeRay's CRD, so that
// update makes the autoscaler own the whole list: the next apply would
// either conflict on it or, forced, put the configured count back. So the
// live replicas and scaleStrategy of every existing group are written back
// unchanged, and the apply takes the list back by force (the result) — the
// autoscaler never applies, so it loses nothing and keeps scaling.
// Configured replicas are only the initial count of a new group.
func keepAutoscalerReplicas(m *rayClusterModel, fields, live map[string]any) bool {
	if m.Autoscaling == nil || !m.Autoscaling.Enabled.ValueBool() {
		return false
	}
	current := map[string]map[string]any{}
	for _, g := range object.Items(live, "spec", "workerGroupSpecs") {
		if name, ok := g["groupName"].(string); ok {
			current[name] = g
		}
	}
	for _, wg := range object.Items(fields, "spec", "workerGroupSpecs") {
		name, _ := wg["groupName"].(string)
		if l, ok := current[name]; ok {
			for _, k := range []string{"replicas", "scaleStrategy"} {
				if v, ok := l[k]; ok {
					wg[k] = v
				}
			}
		}
	}
	return true
}
