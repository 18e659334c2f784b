package podtemplate

import (
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// Object returns the pod template (metadata and spec) as the object engine
// writes it: the typed fields laid over the overlay, containers, volumes and
// env merged by name. Values must be known; a template that failed Validate
// (an overlay that does not decode) contributes only its typed fields.
func (t *Template) Object() map[string]any {
	typed := t.typedObject()
	overlay := t.overlay()
	if overlay == nil {
		return typed
	}
	return merge(overlay, typed, "").(map[string]any)
}

// overlay is the decoded pod_template, nil when unset or invalid.
func (t *Template) overlay() map[string]any {
	if t == nil || !object.Known(t.PodTemplate) {
		return nil
	}
	m, err := Decode[podTemplate](t.PodTemplate.ValueString())
	if err != nil {
		return nil
	}
	return m
}

// typedObject is the pod template of the typed attributes alone.
func (t *Template) typedObject() map[string]any {
	out := map[string]any{}
	if t == nil {
		return out
	}
	meta := map[string]any{}
	object.Put(meta, "labels", object.MapOut(t.Labels))
	object.Put(meta, "annotations", object.MapOut(t.Annotations))
	if len(meta) > 0 {
		out["metadata"] = meta
	}
	spec := map[string]any{}
	object.Put(spec, "containers", containersOut(t.Containers))
	object.Put(spec, "initContainers", containersOut(t.InitContainers))
	if len(t.Volumes) > 0 {
		vols := make([]any, len(t.Volumes))
		for i := range t.Volumes {
			vols[i] = volumeOut(&t.Volumes[i])
		}
		spec["volumes"] = vols
	}
	object.Put(spec, "serviceAccountName", t.ServiceAccountName)
	object.Put(spec, "nodeSelector", object.MapOut(t.NodeSelector))
	object.Put(spec, "tolerations", object.TolerationsToObject(t.Tolerations))
	if object.Known(t.Affinity) {
		if a, err := Decode[affinity](t.Affinity.ValueString()); err == nil {
			spec["affinity"] = a
		}
	}
	object.Put(spec, "priorityClassName", t.PriorityClassName)
	object.Put(spec, "runtimeClassName", t.RuntimeClassName)
	if t.ImagePullSecrets != nil {
		list := make([]any, len(t.ImagePullSecrets))
		for i, s := range t.ImagePullSecrets {
			list[i] = map[string]any{"name": s.ValueString()}
		}
		spec["imagePullSecrets"] = list
	}
	if sc := t.SecurityContext; sc != nil {
		m := map[string]any{}
		object.Put(m, "runAsUser", sc.RunAsUser)
		object.Put(m, "runAsGroup", sc.RunAsGroup)
		object.Put(m, "runAsNonRoot", sc.RunAsNonRoot)
		object.Put(m, "fsGroup", sc.FSGroup)
		spec["securityContext"] = m
	}
	out["spec"] = spec
	return out
}

func containersOut(cs []Container) []any {
	if len(cs) == 0 {
		return nil
	}
	out := make([]any, len(cs))
	for i := range cs {
		out[i] = containerOut(&cs[i])
	}
	return out
}

func containerOut(c *Container) map[string]any {
	m := map[string]any{"name": c.Name.ValueString()}
	object.Put(m, "image", c.Image)
	object.Put(m, "imagePullPolicy", c.ImagePullPolicy)
	object.Put(m, "command", object.ListOut(c.Command))
	object.Put(m, "args", object.ListOut(c.Args))
	object.Put(m, "workingDir", c.WorkingDir)
	if len(c.Env) > 0 {
		env := make([]any, len(c.Env))
		for i, e := range c.Env {
			env[i] = envOut(e)
		}
		m["env"] = env
	}
	if len(c.Ports) > 0 {
		ports := make([]any, len(c.Ports))
		for i, p := range c.Ports {
			pm := map[string]any{}
			object.Put(pm, "name", p.Name)
			object.Put(pm, "containerPort", p.ContainerPort)
			object.Put(pm, "protocol", p.Protocol)
			object.Put(pm, "hostPort", p.HostPort)
			ports[i] = pm
		}
		m["ports"] = ports
	}
	res := map[string]any{}
	object.Put(res, "requests", object.MapOut(c.Requests))
	object.Put(res, "limits", object.MapOut(c.Limits))
	if len(res) > 0 {
		m["resources"] = res
	}
	if len(c.VolumeMounts) > 0 {
		mounts := make([]any, len(c.VolumeMounts))
		for i, vm := range c.VolumeMounts {
			mm := map[string]any{}
			object.Put(mm, "name", vm.Name)
			object.Put(mm, "mountPath", vm.MountPath)
			object.Put(mm, "subPath", vm.SubPath)
			object.Put(mm, "readOnly", vm.ReadOnly)
			mounts[i] = mm
		}
		m["volumeMounts"] = mounts
	}
	putProbe(m, "startupProbe", c.StartupProbe)
	putProbe(m, "readinessProbe", c.ReadinessProbe)
	putProbe(m, "livenessProbe", c.LivenessProbe)
	if sc := c.SecurityContext; sc != nil {
		s := map[string]any{}
		object.Put(s, "runAsUser", sc.RunAsUser)
		object.Put(s, "runAsGroup", sc.RunAsGroup)
		object.Put(s, "runAsNonRoot", sc.RunAsNonRoot)
		object.Put(s, "privileged", sc.Privileged)
		object.Put(s, "readOnlyRootFilesystem", sc.ReadOnlyRootFilesystem)
		object.Put(s, "allowPrivilegeEscalation", sc.AllowPrivilegeEscalation)
		caps := map[string]any{}
		object.Put(caps, "add", object.ListOut(sc.CapabilitiesAdd))
		object.Put(caps, "drop", object.ListOut(sc.CapabilitiesDrop))
		if len(caps) > 0 {
			s["capabilities"] = caps
		}
		m["securityContext"] = s
	}
	object.Put(m, "restartPolicy", c.RestartPolicy)
	return m
}

func envOut(e EnvVar) map[string]any {
	m := map[string]any{"name": e.Name.ValueString()}
	object.Put(m, "value", e.Value)
	if f := e.ValueFrom; f != nil {
		src := map[string]any{}
		keyRef := func(k string, r *KeyRef) {
			if r == nil {
				return
			}
			rm := map[string]any{}
			object.Put(rm, "name", r.Name)
			object.Put(rm, "key", r.Key)
			object.Put(rm, "optional", r.Optional)
			src[k] = rm
		}
		keyRef("secretKeyRef", f.SecretKeyRef)
		keyRef("configMapKeyRef", f.ConfigMapKeyRef)
		if r := f.FieldRef; r != nil {
			src["fieldRef"] = map[string]any{"fieldPath": r.FieldPath.ValueString()}
		}
		if r := f.ResourceFieldRef; r != nil {
			rm := map[string]any{}
			object.Put(rm, "containerName", r.ContainerName)
			object.Put(rm, "resource", r.Resource)
			object.Put(rm, "divisor", r.Divisor)
			src["resourceFieldRef"] = rm
		}
		m["valueFrom"] = src
	}
	return m
}

func putProbe(c map[string]any, field string, p *Probe) {
	if p == nil {
		return
	}
	m := map[string]any{}
	if h := p.HTTPGet; h != nil {
		hm := map[string]any{"port": portOut(h.Port)}
		object.Put(hm, "path", h.Path)
		object.Put(hm, "scheme", h.Scheme)
		m["httpGet"] = hm
	}
	if s := p.TCPSocket; s != nil {
		m["tcpSocket"] = map[string]any{"port": portOut(s.Port)}
	}
	if e := p.Exec; e != nil {
		m["exec"] = map[string]any{"command": object.ListOut(e.Command)}
	}
	if g := p.GRPC; g != nil {
		gm := map[string]any{}
		object.Put(gm, "port", g.Port)
		object.Put(gm, "service", g.Service)
		m["grpc"] = gm
	}
	object.Put(m, "initialDelaySeconds", p.InitialDelaySeconds)
	object.Put(m, "periodSeconds", p.PeriodSeconds)
	object.Put(m, "timeoutSeconds", p.TimeoutSeconds)
	object.Put(m, "successThreshold", p.SuccessThreshold)
	object.Put(m, "failureThreshold", p.FailureThreshold)
	c[field] = m
}

// portOut writes a port as the API's int-or-string: a number when it is one.
func portOut(s types.String) any {
	if n, err := strconv.ParseInt(s.ValueString(), 10, 32); err == nil {
		return n
	}
	return s.ValueString()
}

func volumeOut(v *Volume) map[string]any {
	m := map[string]any{"name": v.Name.ValueString()}
	if e := v.EmptyDir; e != nil {
		em := map[string]any{}
		object.Put(em, "medium", e.Medium)
		object.Put(em, "sizeLimit", e.SizeLimit)
		m["emptyDir"] = em
	}
	if c := v.PersistentVolumeClaim; c != nil {
		cm := map[string]any{}
		object.Put(cm, "claimName", c.ClaimName)
		object.Put(cm, "readOnly", c.ReadOnly)
		m["persistentVolumeClaim"] = cm
	}
	if c := v.ConfigMap; c != nil {
		cm := map[string]any{}
		object.Put(cm, "name", c.Name)
		object.Put(cm, "optional", c.Optional)
		object.Put(cm, "defaultMode", c.DefaultMode)
		object.Put(cm, "items", itemsOut(c.Items))
		m["configMap"] = cm
	}
	if s := v.Secret; s != nil {
		sm := map[string]any{}
		object.Put(sm, "secretName", s.SecretName)
		object.Put(sm, "optional", s.Optional)
		object.Put(sm, "defaultMode", s.DefaultMode)
		object.Put(sm, "items", itemsOut(s.Items))
		m["secret"] = sm
	}
	if h := v.HostPath; h != nil {
		hm := map[string]any{}
		object.Put(hm, "path", h.Path)
		object.Put(hm, "type", h.Type)
		m["hostPath"] = hm
	}
	return m
}

func itemsOut(items []KeyPath) []any {
	if items == nil {
		return nil
	}
	out := make([]any, len(items))
	for i, it := range items {
		out[i] = map[string]any{"key": it.Key.ValueString(), "path": it.Path.ValueString()}
	}
	return out
}
