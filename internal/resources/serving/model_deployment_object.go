package serving

import (
	"encoding/json"
	"fmt"
	"path"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/modelcache"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
)

// The Deployment both ways. The managed container's probes, GPUs and cache
// mount belong to this resource's attributes: they are added to the pod
// template on the way out and taken off the live template before
// podtemplate.Read on the way in, so the template attribute only ever
// compares what the user wrote there.

// deployRecord is the sizing input a Deployment does not carry, kept in its
// deploySizingAnnotation.
type deployRecord struct {
	ParamsBillion        *float64 `json:"paramsBillion,omitempty"`
	DType                *string  `json:"dtype,omitempty"`
	ModelBytes           *int64   `json:"modelBytes,omitempty"`
	ContextLength        int64    `json:"contextLength"`
	KVCacheBytesPerToken int64    `json:"kvCacheBytesPerToken"`
	AttentionHeads       *int64   `json:"attentionHeads,omitempty"`
	KVHeads              *int64   `json:"kvHeads,omitempty"`
	GPUMemory            string   `json:"gpuMemory"`
	ReserveFraction      float64  `json:"reserveFraction"`
	OverheadBytesPerGPU  int64    `json:"overheadBytesPerGPU"`
	LoadBytesPerSecond   *int64   `json:"loadBytesPerSecond,omitempty"`
	AllowScaleToZero     bool     `json:"allowScaleToZero,omitempty"`
	ServicePort          int64    `json:"servicePort"`
}

func (m *modelDeploymentModel) record() string {
	md := m.Model
	rec := deployRecord{
		ParamsBillion: md.ParamsBillion.ValueFloat64Pointer(), DType: md.DType.ValueStringPointer(), ModelBytes: md.ModelBytes.ValueInt64Pointer(),
		ContextLength: md.ContextLength.ValueInt64(), KVCacheBytesPerToken: md.KVCacheBytesPerToken.ValueInt64(),
		AttentionHeads: md.AttentionHeads.ValueInt64Pointer(), KVHeads: md.KVHeads.ValueInt64Pointer(),
		GPUMemory: m.GPUMemory.ValueString(), ReserveFraction: m.ReserveFraction.ValueFloat64(), OverheadBytesPerGPU: m.OverheadBytesPerGPU.ValueInt64(),
		LoadBytesPerSecond: m.LoadBytesPerSecond.ValueInt64Pointer(), AllowScaleToZero: m.AllowScaleToZero.ValueBool(),
		ServicePort: m.ServicePort.ValueInt64(),
	}
	b, _ := json.Marshal(rec)
	return string(b)
}

func (m *modelDeploymentModel) readRecord(s string) {
	var rec deployRecord
	if s == "" || json.Unmarshal([]byte(s), &rec) != nil {
		return
	}
	m.Model = &deployModelSpec{
		ParamsBillion: types.Float64PointerValue(rec.ParamsBillion), DType: types.StringPointerValue(rec.DType), ModelBytes: types.Int64PointerValue(rec.ModelBytes),
		ContextLength: types.Int64Value(rec.ContextLength), KVCacheBytesPerToken: types.Int64Value(rec.KVCacheBytesPerToken),
		AttentionHeads: types.Int64PointerValue(rec.AttentionHeads), KVHeads: types.Int64PointerValue(rec.KVHeads),
	}
	m.GPUMemory = types.StringValue(rec.GPUMemory)
	m.ReserveFraction = types.Float64Value(rec.ReserveFraction)
	m.OverheadBytesPerGPU = types.Int64Value(rec.OverheadBytesPerGPU)
	m.LoadBytesPerSecond = types.Int64PointerValue(rec.LoadBytesPerSecond)
	m.AllowScaleToZero = types.BoolValue(rec.AllowScaleToZero)
	if rec.ServicePort > 0 {
		m.ServicePort = types.Int64Value(rec.ServicePort)
	}
}

func httpProbe(p string, port, period, timeout, failures int64) map[string]any {
	return map[string]any{"httpGet": map[string]any{"path": p, "port": port},
		"periodSeconds": period, "timeoutSeconds": timeout, "failureThreshold": failures}
}

// sub returns the map at key of m, creating it.
func sub(m map[string]any, key string) map[string]any {
	if v, ok := m[key].(map[string]any); ok {
		return v
	}
	v := map[string]any{}
	m[key] = v
	return v
}

func modelDeploymentFields(m *modelDeploymentModel) map[string]any {
	if !object.Known(m.StartupFailureThreshold) {
		deriveDeployment(m) // a plan made before the cluster was known
	}
	name := m.Name.ValueString()
	tmpl := m.Template.Object()
	labels := sub(sub(tmpl, "metadata"), "labels")
	labels[deploySelectorLabel] = name
	if object.Known(m.QueueName) {
		labels[rayQueueLabel] = m.QueueName.ValueString()
	}
	decorateServer(sub(tmpl, "spec"), m)
	meta := map[string]any{"annotations": map[string]any{deploySizingAnnotation: m.record()}}
	if object.Known(m.QueueName) {
		meta["labels"] = map[string]any{rayQueueLabel: m.QueueName.ValueString()}
	}
	return map[string]any{
		"metadata": meta,
		"spec": map[string]any{
			"replicas": m.Replicas.ValueInt64(),
			"selector": map[string]any{"matchLabels": map[string]any{deploySelectorLabel: name}},
			// A new pod needs its GPUs while the old one holds them: replace
			// one at a time instead of surging (GPU pools rarely have room).
			"strategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": int64(0), "maxUnavailable": int64(1)}},
			"template": tmpl,
		},
	}
}

func readModelDeployment(live map[string]any, m *modelDeploymentModel) {
	m.readRecord(fmt.Sprint(object.Field(live, "metadata", "annotations", deploySizingAnnotation)))
	m.QueueName = object.String(object.Field(live, "metadata", "labels", rayQueueLabel), m.QueueName)
	m.Replicas = object.Int64(object.Field(live, "spec", "replicas"))
	liveTmpl, _ := runtime.DeepCopyJSONValue(object.Fields(live, "spec", "template")).(map[string]any)
	if liveTmpl == nil {
		liveTmpl = map[string]any{}
	}
	if labels := object.Fields(liveTmpl, "metadata", "labels"); labels != nil {
		delete(labels, deploySelectorLabel)
		delete(labels, rayQueueLabel)
		if len(labels) == 0 {
			delete(object.Fields(liveTmpl, "metadata"), "labels")
		}
	}
	if meta := object.Fields(liveTmpl, "metadata"); meta != nil && len(meta) == 0 {
		delete(liveTmpl, "metadata")
	}
	spec := object.Fields(liveTmpl, "spec")
	containers := object.Items(spec, "containers")
	if !object.Known(m.Container) {
		// An import: the container named server, else the only one.
		m.Container = types.StringValue(deployDefaultContainer)
		if len(containers) == 1 {
			m.Container = object.String(containers[0]["name"], types.StringNull())
		}
	}
	var c map[string]any
	for _, x := range containers {
		if x["name"] == m.Container.ValueString() {
			c = x
		}
	}
	m.GPUsPerReplica, m.LivenessPath, m.ReadinessPath, m.StartupFailureThreshold = types.Int64Null(), types.StringNull(), types.StringNull(), types.Int64Null()
	prior := m.ModelCache
	m.ModelCache = nil
	if c != nil {
		readManagedContainer(c, spec, m, prior)
	}
	if m.Port.IsNull() {
		m.Port = types.Int64Value(8000)
	}
	if m.ServicePort.IsNull() {
		m.ServicePort = types.Int64Value(80)
	}
	m.Template = podtemplate.Read(liveTmpl, m.Template)
	threshold := m.StartupFailureThreshold
	deriveDeployment(m)
	m.StartupFailureThreshold = threshold // as live: a changed probe plans its repair
	if m.WaitForReady.IsNull() {
		m.WaitForReady = types.BoolValue(true)
	}
	if m.Timeout.IsNull() {
		m.Timeout = types.StringValue(deployDefaultTimeout)
	}
}

// readManagedContainer takes the fields this resource sets off the live
// managed container (and the cache's volume off the pod) into m.
func readManagedContainer(c, spec map[string]any, m *modelDeploymentModel, prior *deployCache) {
	for _, res := range []string{"limits", "requests"} {
		if l := object.Fields(c, "resources", res); l != nil {
			if q, ok := l[capacity.DefaultGPUResource]; ok && res == "limits" {
				if n, err := strconv.ParseInt(fmt.Sprint(q), 10, 64); err == nil {
					m.GPUsPerReplica = types.Int64Value(n)
				}
			}
			delete(l, capacity.DefaultGPUResource)
			if len(l) == 0 {
				delete(object.Fields(c, "resources"), res)
			}
		}
	}
	if r := object.Fields(c, "resources"); r != nil && len(r) == 0 {
		delete(c, "resources")
	}
	if p := object.Fields(c, "livenessProbe", "httpGet"); p != nil {
		m.LivenessPath = object.String(p["path"], m.LivenessPath)
		m.Port = object.Int64(p["port"])
	}
	if p := object.Fields(c, "readinessProbe", "httpGet"); p != nil {
		m.ReadinessPath = object.String(p["path"], m.ReadinessPath)
	}
	m.StartupFailureThreshold = object.Int64(object.Field(c, "startupProbe", "failureThreshold"))
	delete(c, "startupProbe")
	delete(c, "livenessProbe")
	delete(c, "readinessProbe")

	var mount map[string]any
	var mounts []any
	for _, vm := range object.Items(c, "volumeMounts") {
		if vm["name"] == modelcache.DefaultVolumeName {
			mount = vm
		} else {
			mounts = append(mounts, vm)
		}
	}
	if mount == nil {
		return
	}
	object.Put(c, "volumeMounts", mounts)
	if mounts == nil {
		delete(c, "volumeMounts")
	}
	var vol map[string]any
	var vols []any
	for _, v := range object.Items(spec, "volumes") {
		if v["name"] == modelcache.DefaultVolumeName {
			vol = v
		} else {
			vols = append(vols, v)
		}
	}
	if vols == nil {
		delete(spec, "volumes")
	} else {
		spec["volumes"] = vols
	}
	if vol == nil {
		return
	}
	var p deployCache
	if prior != nil {
		p = *prior
	}
	mc := &deployCache{MountPath: object.String(mount["mountPath"], p.MountPath), ClaimName: p.ClaimName, HostPath: p.HostPath}
	if mc.ClaimName.IsUnknown() {
		mc.ClaimName = types.StringNull()
	}
	if mc.HostPath.IsUnknown() {
		mc.HostPath = types.StringNull()
	}
	if claim, _ := object.Field(vol, "persistentVolumeClaim", "claimName").(string); claim != "" {
		mc.Mode, mc.ClaimName = types.StringValue(modelcache.ModePVC), types.StringValue(claim)
		mc.SubPath = object.String(mount["subPath"], types.StringNull())
	} else if hp, _ := object.Field(vol, "hostPath", "path").(string); hp != "" {
		mc.Mode = types.StringValue(modelcache.ModeNodeLocal)
		mc.HostPath, mc.SubPath = types.StringValue(path.Dir(hp)), types.StringValue(path.Base(hp))
		if object.Known(p.HostPath) && object.Known(p.SubPath) && path.Join(p.HostPath.ValueString(), p.SubPath.ValueString()) == hp {
			mc.HostPath, mc.SubPath = p.HostPath, p.SubPath // the user's split of the same directory
		}
	} else {
		return
	}
	m.ModelCache = mc
}

// decorateServer adds to the managed container of the pod spec what m's
// attributes set: its GPUs, the three probes and the model cache mounted
// read-only (with the cache's volume on the pod). The serving runtime's pod
// gets the same through it.
func decorateServer(spec map[string]any, m *modelDeploymentModel) {
	port := m.Port.ValueInt64()
	for _, c := range object.List(spec, "containers") {
		c, ok := c.(map[string]any)
		if !ok || c["name"] != m.Container.ValueString() {
			continue
		}
		gpus := strconv.FormatInt(m.GPUsPerReplica.ValueInt64(), 10)
		sub(sub(c, "resources"), "limits")[capacity.DefaultGPUResource] = gpus
		if req, ok := object.Fields(c, "resources")["requests"].(map[string]any); ok {
			req[capacity.DefaultGPUResource] = gpus
		}
		if object.Known(m.StartupFailureThreshold) {
			// (Null only in the object a prior state writes, read from a
			// live pod without the probe: the plan's diff then shows it.)
			c["startupProbe"] = httpProbe(m.LivenessPath.ValueString(), port, startupPeriod, livenessTimeout, m.StartupFailureThreshold.ValueInt64())
		}
		c["livenessProbe"] = httpProbe(m.LivenessPath.ValueString(), port, livenessPeriod, livenessTimeout, livenessFailures)
		c["readinessProbe"] = httpProbe(m.ReadinessPath.ValueString(), port, readinessPeriod, readinessTimeout, readinessFailures)
		if mc := m.ModelCache; mc != nil {
			if vol, mount, err := mc.cache().Mount(modelcache.DefaultVolumeName); err == nil {
				mm := map[string]any{"name": mount.Name, "mountPath": mount.MountPath, "readOnly": true}
				object.Put(mm, "subPath", mount.SubPath)
				c["volumeMounts"] = append(object.List(c, "volumeMounts"), mm)
				v := map[string]any{"name": vol.Name}
				if pvc := vol.PersistentVolumeClaim; pvc != nil {
					v["persistentVolumeClaim"] = map[string]any{"claimName": pvc.ClaimName, "readOnly": true}
				}
				if hp := vol.HostPath; hp != nil {
					v["hostPath"] = map[string]any{"path": hp.Path, "type": string(*hp.Type)}
				}
				spec["volumes"] = append(object.List(spec, "volumes"), v)
			}
		}
	}
}
