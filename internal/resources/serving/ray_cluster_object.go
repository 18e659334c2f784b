package serving

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/modelcache"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// Apply and read: the RayCluster's fields from the model, and the model read
// back from the live object without inventing a diff from what KubeRay and
// Kueue add.

// ---- model → object -------------------------------------------------------

func rayImageOf(m *rayClusterModel) string {
	if object.Known(m.Image) {
		return m.Image.ValueString()
	}
	return rayDefaultImage + m.RayVersion.ValueString()
}

func rayResourcesOut(cpu, memory types.String, gpus types.Int64) map[string]any {
	limits := map[string]any{}
	object.Put(limits, "cpu", cpu)
	object.Put(limits, "memory", memory)
	if object.Known(gpus) && gpus.ValueInt64() > 0 {
		limits[capacity.DefaultGPUResource] = strconv.FormatInt(gpus.ValueInt64(), 10)
	}
	if len(limits) == 0 {
		return nil
	}
	requests := map[string]any{}
	for k, v := range limits {
		requests[k] = v
	}
	return map[string]any{"limits": limits, "requests": requests}
}

// rayPodTemplate is a Ray pod's template: one container, the cache's volume,
// and the queue label.
func rayPodTemplate(m *rayClusterModel, container string, res map[string]any, extra map[string]any) map[string]any {
	c := map[string]any{"name": container, "image": rayImageOf(m)}
	object.Put(c, "resources", res)
	spec := map[string]any{"containers": []any{c}}
	if mc := m.ModelCache; mc != nil {
		if vol, mount, err := mc.cache().Mount(modelcache.DefaultVolumeName); err == nil {
			mountMap := map[string]any{"name": mount.Name, "mountPath": mount.MountPath, "readOnly": true}
			object.Put(mountMap, "subPath", mount.SubPath)
			c["volumeMounts"] = []any{mountMap}
			v := map[string]any{"name": vol.Name}
			if pvc := vol.PersistentVolumeClaim; pvc != nil {
				v["persistentVolumeClaim"] = map[string]any{"claimName": pvc.ClaimName, "readOnly": true}
			}
			if hp := vol.HostPath; hp != nil {
				v["hostPath"] = map[string]any{"path": hp.Path, "type": string(*hp.Type)}
			}
			spec["volumes"] = []any{v}
		}
	}
	for k, v := range extra {
		object.Put(spec, k, v)
	}
	tmpl := map[string]any{"spec": spec}
	if object.Known(m.QueueName) {
		tmpl["metadata"] = map[string]any{"labels": map[string]any{rayQueueLabel: m.QueueName.ValueString()}}
	}
	return tmpl
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
		"template":       rayPodTemplate(m, "ray-head", rayResourcesOut(h.CPU, h.Memory, h.GPUs), nil),
	}
	object.Put(head, "serviceType", h.ServiceType)
	spec["headGroupSpec"] = head
	if len(m.WorkerGroups) > 0 {
		groups := make([]any, len(m.WorkerGroups))
		for i, g := range m.WorkerGroups {
			wg := map[string]any{
				"groupName":      g.Name.ValueString(),
				"rayStartParams": rayStartParamsOut(g.RayStartParams),
				"template": rayPodTemplate(m, "ray-worker", rayResourcesOut(g.CPU, g.Memory, g.GPUs), map[string]any{
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

// ---- object → model -------------------------------------------------------

func readRayCluster(live map[string]any, m *rayClusterModel) {
	spec := object.Fields(live, "spec")
	m.RayVersion = object.String(spec["rayVersion"], m.RayVersion)
	head := object.Fields(spec, "headGroupSpec")
	headC := rayFirstContainer(object.Fields(head, "template"))
	image, _ := headC["image"].(string)
	if m.Image.IsNull() && image == rayDefaultImage+m.RayVersion.ValueString() {
		// the default, not written by the user
	} else {
		m.Image = object.String(image, m.Image)
	}

	var prior rayHead
	if m.Head != nil {
		prior = *m.Head
	}
	h := &rayHead{RayStartParams: object.StringMap(head["rayStartParams"], prior.RayStartParams)}
	h.CPU, h.Memory, h.GPUs = rayResourcesIn(headC, prior.CPU, prior.Memory, prior.GPUs)
	h.ServiceType = object.String(head["serviceType"], prior.ServiceType)
	if h.ServiceType.IsNull() {
		h.ServiceType = types.StringValue("ClusterIP") // KubeRay's default
	}
	m.Head = h

	autoscaling := false
	var groups []rayWorkerGroup
	for i, wg := range object.Items(spec, "workerGroupSpecs") {
		var p rayWorkerGroup
		if i < len(m.WorkerGroups) {
			p = m.WorkerGroups[i]
		}
		g := rayWorkerGroup{
			Name:           object.String(wg["groupName"], p.Name),
			Replicas:       object.Int64(wg["replicas"]),
			MinReplicas:    object.Int64(wg["minReplicas"]),
			MaxReplicas:    object.Int64(wg["maxReplicas"]),
			RayStartParams: object.StringMap(wg["rayStartParams"], p.RayStartParams),
		}
		if g.MinReplicas.IsNull() {
			g.MinReplicas = types.Int64Value(0)
		}
		if g.Replicas.IsNull() {
			g.Replicas = types.Int64Value(1)
		}
		if p.MaxReplicas.IsNull() && g.MaxReplicas.ValueInt64() == kuberayMaxReplicas {
			g.MaxReplicas = types.Int64Null() // KubeRay's default, not written
		}
		tmpl := object.Fields(wg, "template")
		c := rayFirstContainer(tmpl)
		g.CPU, g.Memory, g.GPUs = rayResourcesIn(c, p.CPU, p.Memory, p.GPUs)
		g.NodeSelector = rayOwnedSelector(object.Fields(tmpl, "spec", "nodeSelector"), p.NodeSelector)
		g.Tolerations = rayOwnedTolerations(object.List(tmpl, "spec", "tolerations"), p.Tolerations)
		groups = append(groups, g)
	}
	if m.Autoscaling != nil || spec["enableInTreeAutoscaling"] != nil {
		a := &rayAutoscaling{Enabled: types.BoolValue(spec["enableInTreeAutoscaling"] == true), IdleTimeout: types.StringNull()}
		var prior types.String
		if m.Autoscaling != nil {
			prior = m.Autoscaling.IdleTimeout
		}
		if s := object.Int64(object.Field(spec, "autoscalerOptions", "idleTimeoutSeconds")); !s.IsNull() {
			a.IdleTimeout = types.StringValue(rayDuration(s.ValueInt64()))
			if p, err := raySeconds(prior); err == nil && p == s.ValueInt64() {
				a.IdleTimeout = prior // the user's spelling
			}
		}
		m.Autoscaling = a
		autoscaling = a.Enabled.ValueBool()
	}
	if autoscaling {
		// The autoscaler owns replicas once running: keep what was configured.
		for i := range groups {
			if i < len(m.WorkerGroups) && object.Known(m.WorkerGroups[i].Replicas) {
				groups[i].Replicas = m.WorkerGroups[i].Replicas
			}
		}
	}
	m.WorkerGroups = groups

	labels := object.Fields(live, "metadata", "labels")
	m.QueueName = object.String(labels[rayQueueLabel], m.QueueName)
	if m.QueueName.IsNull() {
		// Without a queue the suspension is the user's; with one it is Kueue's.
		suspended := spec["suspend"] == true
		if suspended || !m.Suspend.IsNull() {
			m.Suspend = types.BoolValue(suspended)
		}
	}
	m.ModelCache = rayReadCache(object.Fields(head, "template"), headC, m.ModelCache)
	if m.WaitForReady.IsNull() {
		m.WaitForReady = types.BoolValue(true) // import: the default
	}

	name, _ := object.Field(live, "metadata", "name").(string)
	ns, _ := object.Field(live, "metadata", "namespace").(string)
	raySetAddresses(m, name, ns)
	if svc, _ := object.Field(live, "status", "head", "serviceName").(string); svc != "" {
		m.HeadServiceName = types.StringValue(svc)
	}
	m.ReadyWorkers = object.Int64(object.Field(live, "status", "readyWorkerReplicas"))
	if m.ReadyWorkers.IsNull() {
		m.ReadyWorkers = types.Int64Value(0)
	}
}

// raySetAddresses computes the head service's name and addresses the way
// KubeRay names them, with the ports the head's ray_start_params choose.
func raySetAddresses(m *rayClusterModel, name, namespace string) {
	svc := name + "-head-svc"
	dashboard, client := rayDashboardPort, rayClientPort
	if m.Head != nil {
		params := object.Labels(m.Head.RayStartParams)
		if p := params["dashboard-port"]; p != "" {
			dashboard = p
		}
		if p := params["ray-client-server-port"]; p != "" {
			client = p
		}
	}
	host := svc + "." + namespace + ".svc"
	m.HeadServiceName = types.StringValue(svc)
	m.DashboardAddress = types.StringValue(host + ":" + dashboard)
	m.ClientAddress = types.StringValue("ray://" + host + ":" + client)
}

func rayFirstContainer(tmpl map[string]any) map[string]any {
	cs := object.Items(tmpl, "spec", "containers")
	if len(cs) == 0 {
		return nil
	}
	return cs[0]
}

func rayResourcesIn(c map[string]any, cpu, memory types.String, gpus types.Int64) (types.String, types.String, types.Int64) {
	limits := object.Fields(c, "resources", "limits")
	g := types.Int64Null()
	if q, ok := limits[capacity.DefaultGPUResource]; ok {
		if n, err := strconv.ParseInt(fmt.Sprint(q), 10, 64); err == nil {
			g = types.Int64Value(n)
		}
	}
	if g.IsNull() && object.Known(gpus) && gpus.ValueInt64() == 0 {
		g = gpus // 0 written as no GPU
	}
	return object.Quantity(limits["cpu"], cpu), object.Quantity(limits["memory"], memory), g
}

// rayOwnedSelector reads a node selector. With a prior value only its keys are
// compared: Kueue adds its flavor's node labels on admission.
func rayOwnedSelector(live map[string]any, prior types.Map) types.Map {
	if object.Known(prior) {
		owned := map[string]any{}
		for k := range prior.Elements() {
			if v, ok := live[k]; ok {
				owned[k] = v
			}
		}
		live = owned
	}
	return object.StringMap(live, prior)
}

// rayOwnedTolerations reads tolerations. With a prior value only tolerations
// equal to one of it are kept: Kueue appends its flavor's on admission.
func rayOwnedTolerations(live []any, prior []object.Toleration) []object.Toleration {
	var out []object.Toleration
	for _, t := range object.TolerationsFromObject(live) {
		if prior != nil && !slices.ContainsFunc(prior, t.Equal) {
			continue
		}
		out = append(out, t)
	}
	if out == nil {
		return object.EmptyOrNil(prior)
	}
	return out
}

func rayReadCache(tmpl, c map[string]any, prior *modelCacheModel) *modelCacheModel {
	var mount map[string]any
	for _, vm := range object.Items(c, "volumeMounts") {
		if vm["name"] == modelcache.DefaultVolumeName {
			mount = vm
		}
	}
	var vol map[string]any
	for _, v := range object.Items(tmpl, "spec", "volumes") {
		if v["name"] == modelcache.DefaultVolumeName {
			vol = v
		}
	}
	if mount == nil || vol == nil {
		return nil
	}
	var p modelCacheModel
	if prior != nil {
		p = *prior
	}
	out := &modelCacheModel{MountPath: object.String(mount["mountPath"], p.MountPath), ClaimName: types.StringNull(), HostPath: types.StringNull()}
	if claim, _ := object.Field(vol, "persistentVolumeClaim", "claimName").(string); claim != "" {
		out.Mode = types.StringValue(modelcache.ModePVC)
		out.ClaimName = types.StringValue(claim)
		out.SubPath = object.String(mount["subPath"], p.SubPath)
		if !p.HostPath.IsNull() {
			out.HostPath = p.HostPath // not written in this mode
		}
		return out
	}
	if hp, _ := object.Field(vol, "hostPath", "path").(string); hp != "" {
		out.Mode = types.StringValue(modelcache.ModeNodeLocal)
		out.HostPath, out.SubPath = types.StringValue(path.Dir(hp)), types.StringValue(path.Base(hp))
		if object.Known(p.HostPath) && object.Known(p.SubPath) && path.Join(p.HostPath.ValueString(), p.SubPath.ValueString()) == hp {
			out.HostPath, out.SubPath = p.HostPath, p.SubPath
		}
		if !p.ClaimName.IsNull() {
			out.ClaimName = p.ClaimName
		}
		return out
	}
	return nil
}
