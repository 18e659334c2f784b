package serving

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/modelcache"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// The pod templates of a RayCluster's head and worker groups, both ways: the
// template attribute (the shared pod-template model) with the Ray container
// filled in from the typed attributes on the way out, and on the way back
// the typed attributes taken out of the live template first, so that each
// field is read into exactly one attribute and an import reproduces the
// object.

// Default names of the Ray container when container_name is unset.
const (
	rayHeadContainer   = "ray-head"
	rayWorkerContainer = "ray-worker"
)

// containerName is the Ray container's name: container_name, else def.
func (p *rayPod) containerName(def string) string {
	if object.Known(p.ContainerName) {
		return p.ContainerName.ValueString()
	}
	return def
}

// ---- model → object -------------------------------------------------------

// rayPodTemplate is a Ray pod's template: the template attribute's pod with
// the Ray container (first when the template does not list it) filled in
// from the typed attributes, the model cache's volume and mount, the queue
// label, and the given pod-level fields (a worker group's node selector and
// tolerations; nil values are left out).
func rayPodTemplate(m *rayClusterModel, p *rayPod, def string, pod map[string]any) map[string]any {
	tmpl := map[string]any{}
	if p.Template != nil {
		tmpl = p.Template.Object()
	}
	spec := rayChild(tmpl, "spec")
	name := p.containerName(def)
	containers, _ := spec["containers"].([]any)
	var c map[string]any
	for _, x := range containers {
		if cm, ok := x.(map[string]any); ok && cm["name"] == name {
			c = cm
		}
	}
	if c == nil {
		c = map[string]any{"name": name}
		containers = append([]any{c}, containers...)
	}
	spec["containers"] = containers
	if _, ok := c["image"]; !ok {
		c["image"] = rayImageOf(m)
	}
	rayPutResources(c, p.CPU, p.Memory, p.GPUs)
	if mc := m.ModelCache; mc != nil {
		if vol, mount, err := mc.cache().Mount(modelcache.DefaultVolumeName); err == nil {
			mountMap := map[string]any{"name": mount.Name, "mountPath": mount.MountPath, "readOnly": true}
			object.Put(mountMap, "subPath", mount.SubPath)
			mounts, _ := c["volumeMounts"].([]any)
			c["volumeMounts"] = append(mounts, mountMap)
			v := map[string]any{"name": vol.Name}
			if pvc := vol.PersistentVolumeClaim; pvc != nil {
				v["persistentVolumeClaim"] = map[string]any{"claimName": pvc.ClaimName, "readOnly": true}
			}
			if hp := vol.HostPath; hp != nil {
				v["hostPath"] = map[string]any{"path": hp.Path, "type": string(*hp.Type)}
			}
			vols, _ := spec["volumes"].([]any)
			spec["volumes"] = append(vols, v)
		}
	}
	for k, v := range pod {
		object.Put(spec, k, v)
	}
	if object.Known(m.QueueName) {
		rayChild(rayChild(tmpl, "metadata"), "labels")[rayQueueLabel] = m.QueueName.ValueString()
	}
	return tmpl
}

// rayChild is m[k] as a map, added when absent.
func rayChild(m map[string]any, k string) map[string]any {
	c, ok := m[k].(map[string]any)
	if !ok {
		c = map[string]any{}
		m[k] = c
	}
	return c
}

// rayPutResources writes cpu, memory and gpus as both request and limit of
// the container c.
func rayPutResources(c map[string]any, cpu, memory types.String, gpus types.Int64) {
	put := func(name string, v any) {
		res := rayChild(c, "resources")
		rayChild(res, "requests")[name] = v
		rayChild(res, "limits")[name] = v
	}
	if object.Known(cpu) {
		put("cpu", cpu.ValueString())
	}
	if object.Known(memory) {
		put("memory", memory.ValueString())
	}
	if object.Known(gpus) && gpus.ValueInt64() > 0 {
		put(capacity.DefaultGPUResource, strconv.FormatInt(gpus.ValueInt64(), 10))
	}
}

// ---- object → model -------------------------------------------------------

// rayPodRead says how to read a Ray pod template into a rayPod.
type rayPodRead struct {
	importing bool   // the prior state is empty: everything live is read
	def       string // the Ray container's default name
	image     string // the image a Ray container without one of its own gets
	cache     bool   // the model cache's volume and mount belong to model_cache
	queue     bool   // the queue label belongs to queue_name
}

// rayContainerOf names the Ray container of a live template and returns it:
// container_name as in state, on import the first container (KubeRay's Ray
// container), else the default name.
func rayContainerOf(tmpl map[string]any, prior types.String, def string, importing bool) (string, map[string]any) {
	cs := object.Items(tmpl, "spec", "containers")
	name := def
	switch {
	case object.Known(prior):
		name = prior.ValueString()
	case importing && len(cs) > 0:
		name, _ = cs[0]["name"].(string)
	}
	for _, c := range cs {
		if c["name"] == name {
			return name, c
		}
	}
	return name, nil
}

// read reads the live template tmpl (a copy, which it changes) into a
// rayPod: the typed attributes take their fields out of it first, then the
// template attribute reads what is left. Without a prior template only an
// import reads one; a refresh reads what was added live (shown as a diff)
// except the node selectors, tolerations, labels and annotations that Kueue
// injects on admission: of those only what the prior state has is compared.
func (r rayPodRead) read(tmpl map[string]any, prior rayPod) rayPod {
	name, c := rayContainerOf(tmpl, prior.ContainerName, r.def, r.importing)
	out := rayPod{ContainerName: types.StringNull()}
	if object.Known(prior.ContainerName) || name != r.def {
		out.ContainerName = types.StringValue(name)
	}
	priorC := prior.Template.Container(name)
	if c != nil && c["image"] == r.image && (priorC == nil || priorC.Image.IsNull()) {
		delete(c, "image") // the cluster's image
	}
	out.CPU = r.takeQuantity(c, "cpu", prior.CPU)
	out.Memory = r.takeQuantity(c, "memory", prior.Memory)
	out.GPUs = r.takeGPUs(c, prior.GPUs)
	if res, ok := c["resources"].(map[string]any); ok {
		for _, k := range []string{"requests", "limits"} {
			if m, ok := res[k].(map[string]any); ok && len(m) == 0 {
				delete(res, k)
			}
		}
		if len(res) == 0 {
			delete(c, "resources")
		}
	}
	spec := object.Fields(tmpl, "spec")
	if r.cache {
		rayRemoveNamed(c, "volumeMounts", modelcache.DefaultVolumeName)
		rayRemoveNamed(spec, "volumes", modelcache.DefaultVolumeName)
	}
	meta := object.Fields(tmpl, "metadata")
	if labels := object.Fields(meta, "labels"); r.queue && labels != nil {
		delete(labels, rayQueueLabel)
		if len(labels) == 0 {
			delete(meta, "labels")
		}
		if len(meta) == 0 {
			delete(tmpl, "metadata")
		}
	}
	if !r.importing {
		pt := prior.Template
		if pt == nil {
			pt = &podtemplate.Template{}
		}
		rayKeepKeys(spec, "nodeSelector", pt.NodeSelector)
		rayKeepKeys(meta, "labels", pt.Labels)
		rayKeepKeys(meta, "annotations", pt.Annotations)
		rayKeepTolerations(spec, pt.Tolerations)
	}

	priorT := prior.Template
	if priorT == nil && !r.importing {
		priorT = &podtemplate.Template{} // a refresh: no overlay of what is left over
	}
	t := podtemplate.Read(tmpl, priorT)
	if t != nil && (prior.Template == nil || prior.Template.Container(name) == nil) {
		// The Ray container with nothing beyond what the typed attributes say
		// is not listed.
		t.Containers = slices.DeleteFunc(t.Containers, func(x podtemplate.Container) bool {
			return x.Name.ValueString() == name && rayEmptyContainer(x)
		})
		if len(t.Containers) == 0 {
			t.Containers = nil
		}
	}
	if t != nil && prior.Template == nil && reflect.DeepEqual(t.Object(), map[string]any{"spec": map[string]any{}}) {
		t = nil
	}
	out.Template = t
	return out
}

// rayEmptyContainer says whether a container says nothing beyond its name.
func rayEmptyContainer(c podtemplate.Container) bool {
	obj := (&podtemplate.Template{Containers: []podtemplate.Container{c}}).Object()
	return reflect.DeepEqual(obj, map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": c.Name.ValueString()}}}})
}

// takeQuantity takes a typed quantity (cpu, memory: request and limit) out
// of the container c: on import when the live request and limit are equal,
// on refresh when the attribute is set in state. A request that differs
// from the limit and from state is read, so that the plan shows it.
func (r rayPodRead) takeQuantity(c map[string]any, name string, prior types.String) types.String {
	reqs, lims := object.Fields(c, "resources", "requests"), object.Fields(c, "resources", "limits")
	rq, hasR := reqs[name]
	lq, hasL := lims[name]
	if r.importing && !(hasR && hasL && rayQuantityEqual(rq, lq)) || !r.importing && prior.IsNull() {
		return types.StringNull()
	}
	delete(reqs, name)
	delete(lims, name)
	v := lq
	if hasR && (!hasL || !rayQuantityEqual(rq, lq)) && !rayQuantityEqual(rq, prior.ValueString()) {
		v = rq
	}
	if !hasR && !hasL {
		return types.StringNull()
	}
	return object.Quantity(v, prior)
}

// takeGPUs is takeQuantity for the GPUs, a count.
func (r rayPodRead) takeGPUs(c map[string]any, prior types.Int64) types.Int64 {
	reqs, lims := object.Fields(c, "resources", "requests"), object.Fields(c, "resources", "limits")
	rq, hasR := reqs[capacity.DefaultGPUResource]
	lq, hasL := lims[capacity.DefaultGPUResource]
	if r.importing && !(hasR && hasL && rayQuantityEqual(rq, lq)) || !r.importing && prior.IsNull() {
		return types.Int64Null()
	}
	delete(reqs, capacity.DefaultGPUResource)
	delete(lims, capacity.DefaultGPUResource)
	v, has := lq, hasL
	if hasR && (!hasL || !rayQuantityEqual(rq, lq)) && !rayQuantityEqual(rq, fmt.Sprint(prior.ValueInt64())) {
		v, has = rq, true
	}
	if !has {
		if object.Known(prior) && prior.ValueInt64() == 0 {
			return prior // 0 written as no GPU
		}
		return types.Int64Null()
	}
	if n, err := strconv.ParseInt(fmt.Sprint(v), 10, 64); err == nil {
		return types.Int64Value(n)
	}
	return types.Int64Value(-1) // not a count: shown as a diff
}

func rayQuantityEqual(a, b any) bool {
	qa, ea := validators.ParseQuantity(fmt.Sprint(a))
	qb, eb := validators.ParseQuantity(fmt.Sprint(b))
	return ea == nil && eb == nil && qa.Cmp(qb) == 0
}

// rayRemoveNamed removes the element named name from the list m[field].
func rayRemoveNamed(m map[string]any, field, name string) {
	l, ok := m[field].([]any)
	if !ok {
		return
	}
	l = slices.DeleteFunc(slices.Clone(l), func(x any) bool {
		e, _ := x.(map[string]any)
		return e["name"] == name
	})
	if len(l) == 0 {
		delete(m, field)
		return
	}
	m[field] = l
}

// rayKeepKeys keeps only the keys of m[field] that prior has (the map
// itself stays: an empty one reads as an unset attribute).
func rayKeepKeys(m map[string]any, field string, prior types.Map) {
	live, _ := m[field].(map[string]any)
	for k := range live {
		if _, ok := prior.Elements()[k]; !ok || !object.Known(prior) {
			delete(live, k)
		}
	}
}

// rayKeepTolerations keeps only the live tolerations equal to one of prior.
func rayKeepTolerations(spec map[string]any, prior []object.Toleration) {
	live, ok := spec["tolerations"].([]any)
	if !ok {
		return
	}
	var kept []any
	for i, t := range object.TolerationsFromObject(live) {
		if slices.ContainsFunc(prior, t.Equal) {
			kept = append(kept, live[i])
		}
	}
	if kept == nil {
		delete(spec, "tolerations")
		return
	}
	spec["tolerations"] = kept
}
