package serving

import (
	"path"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/modelcache"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// Read: the model from the live RayCluster, without inventing a diff from
// what KubeRay and Kueue add.

// readRayCluster reads the live object into m, which holds the prior state
// (everything null on import: then everything the object says is read, and
// what the typed attributes cannot say goes in the templates).
func readRayCluster(live map[string]any, m *rayClusterModel) {
	importing := m.RayVersion.IsNull()
	spec := object.Fields(live, "spec")
	m.RayVersion = object.String(spec["rayVersion"], m.RayVersion)
	head := object.Fields(spec, "headGroupSpec")
	var prior rayHead
	if m.Head != nil {
		prior = *m.Head
	}
	headTmpl := rayCopy(object.Fields(head, "template"))
	headName, headC := rayContainerOf(headTmpl, prior.ContainerName, rayHeadContainer, importing)
	if pc := prior.Template.Container(headName); pc == nil || pc.Image.IsNull() {
		// The head's Ray container has the cluster's image (no image of its own).
		image, _ := headC["image"].(string)
		if m.Image.IsNull() && image == rayDefaultImage+m.RayVersion.ValueString() {
			// the default, not written by the user
		} else {
			m.Image = object.String(image, m.Image)
		}
	}
	m.ModelCache = rayReadCache(headTmpl, headC, m.ModelCache)
	labels := object.Fields(live, "metadata", "labels")
	m.QueueName = object.String(labels[rayQueueLabel], m.QueueName)
	read := func(def string) rayPodRead {
		return rayPodRead{importing: importing, def: def, image: rayImageOf(m), cache: m.ModelCache != nil, queue: object.Known(m.QueueName)}
	}

	h := &rayHead{RayStartParams: object.StringMap(head["rayStartParams"], prior.RayStartParams)}
	h.rayPod = read(rayHeadContainer).read(headTmpl, prior.rayPod)
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
		tmpl := rayCopy(object.Fields(wg, "template"))
		g.NodeSelector, g.Tolerations = rayTakeScheduling(tmpl, p, importing)
		g.rayPod = read(rayWorkerContainer).read(tmpl, p.rayPod)
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

	if m.QueueName.IsNull() {
		// Without a queue the suspension is the user's; with one it is Kueue's.
		suspended := spec["suspend"] == true
		if suspended || !m.Suspend.IsNull() {
			m.Suspend = types.BoolValue(suspended)
		}
	}
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

// rayTakeScheduling takes a worker group's node_selector and tolerations out
// of its live template: on import all of them; on refresh the selector's
// keys and the tolerations the prior state has (Kueue adds its flavor's on
// admission), and none when the attribute was unset.
func rayTakeScheduling(tmpl map[string]any, prior rayWorkerGroup, importing bool) (types.Map, []object.Toleration) {
	spec := object.Fields(tmpl, "spec")
	sel := types.MapNull(types.StringType)
	if live := object.Fields(spec, "nodeSelector"); importing || object.Known(prior.NodeSelector) {
		sel = rayOwnedSelector(live, prior.NodeSelector)
		for k := range sel.Elements() {
			delete(live, k)
		}
		if len(live) == 0 {
			delete(spec, "nodeSelector")
		}
	}
	var tols []object.Toleration
	if live := object.List(spec, "tolerations"); importing || prior.Tolerations != nil {
		tols = rayOwnedTolerations(live, prior.Tolerations)
		var rest []any
		for i, t := range object.TolerationsFromObject(live) {
			if !slices.ContainsFunc(tols, t.Equal) {
				rest = append(rest, live[i])
			}
		}
		if rest == nil {
			delete(spec, "tolerations")
		} else {
			spec["tolerations"] = rest
		}
	}
	return sel, tols
}

// rayCopy is a deep copy of a decoded JSON value.
func rayCopy(m map[string]any) map[string]any {
	c, _ := rayCopyValue(m).(map[string]any)
	return c
}

func rayCopyValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = rayCopyValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = rayCopyValue(e)
		}
		return out
	}
	return v
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
