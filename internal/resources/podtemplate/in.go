package podtemplate

import (
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

// Read maps a live pod template (metadata and spec, as in a workload's
// spec.template) into the model. prior is the state before (nil on import):
// a field the user left unset keeps null when the live value is the
// server's default, equal quantities keep the user's spelling, and the
// overlay and affinity keep the user's text while the live object says the
// same. Containers, volumes and env are matched to prior by name, so the
// names are always the live object's. On import (prior nil) pod_template is
// set to what the typed attributes cannot carry (see Remainder).
func Read(tmpl map[string]any, prior *Template) *Template {
	if tmpl == nil {
		return nil
	}
	var p Template
	if prior != nil {
		p = *prior
	}
	spec := object.Fields(tmpl, "spec")
	t := &Template{
		Labels:             object.StringMap(object.Field(tmpl, "metadata", "labels"), p.Labels),
		Annotations:        object.StringMap(object.Field(tmpl, "metadata", "annotations"), p.Annotations),
		Containers:         containersIn(object.Items(spec, "containers"), p.Containers),
		InitContainers:     containersIn(object.Items(spec, "initContainers"), p.InitContainers),
		ServiceAccountName: object.String(spec["serviceAccountName"], p.ServiceAccountName),
		NodeSelector:       object.StringMap(spec["nodeSelector"], p.NodeSelector),
		Tolerations:        object.ReadTolerations(tolerationList(spec), p.Tolerations),
		PriorityClassName:  object.String(spec["priorityClassName"], p.PriorityClassName),
		RuntimeClassName:   object.String(spec["runtimeClassName"], p.RuntimeClassName),
		Affinity:           documentIn(spec["affinity"], p.Affinity),
		PodTemplate:        overlayIn(tmpl, p.PodTemplate),
	}
	if t.InitContainers == nil && p.InitContainers != nil && len(p.InitContainers) == 0 {
		t.InitContainers = p.InitContainers
	}
	for _, v := range object.Items(spec, "volumes") {
		name, _ := v["name"].(string)
		t.Volumes = append(t.Volumes, volumeIn(v, findVolume(p.Volumes, name)))
	}
	if t.Volumes == nil && p.Volumes != nil && len(p.Volumes) == 0 {
		t.Volumes = p.Volumes
	}
	var secrets []any
	for _, s := range object.Items(spec, "imagePullSecrets") {
		secrets = append(secrets, s["name"])
	}
	t.ImagePullSecrets = object.StringList(secrets, p.ImagePullSecrets)
	if sc := object.Fields(spec, "securityContext"); len(sc) > 0 || p.SecurityContext != nil {
		t.SecurityContext = &PodSecurityContext{
			RunAsUser: object.Int64(sc["runAsUser"]), RunAsGroup: object.Int64(sc["runAsGroup"]),
			RunAsNonRoot: boolIn(sc["runAsNonRoot"]), FSGroup: object.Int64(sc["fsGroup"]),
		}
		if p.SecurityContext == nil && *t.SecurityContext == (PodSecurityContext{types.Int64Null(), types.Int64Null(), types.BoolNull(), types.Int64Null()}) {
			t.SecurityContext = nil // {} or only fields the overlay carries
		}
	}
	if prior == nil {
		// An import: what the typed attributes cannot say goes in the
		// overlay, so the generated configuration reproduces the object.
		t.PodTemplate = remainderOverlay(tmpl, t)
	}
	return t
}

func findVolume(vs []Volume, name string) *Volume {
	for i := range vs {
		if vs[i].Name.ValueString() == name {
			return &vs[i]
		}
	}
	return nil
}

func findContainer(cs []Container, name string) *Container {
	for i := range cs {
		if cs[i].Name.ValueString() == name {
			return &cs[i]
		}
	}
	return nil
}

func containersIn(live []map[string]any, prior []Container) []Container {
	if len(live) == 0 {
		return nil
	}
	out := make([]Container, len(live))
	for i, c := range live {
		name, _ := c["name"].(string)
		out[i] = containerIn(c, findContainer(prior, name))
	}
	return out
}

func containerIn(c map[string]any, prior *Container) Container {
	var p Container
	if prior != nil {
		p = *prior
	}
	image, _ := c["image"].(string)
	out := Container{
		Name:            types.StringValue(fmt.Sprint(c["name"])),
		Image:           object.String(c["image"], p.Image),
		ImagePullPolicy: defaulted(object.String(c["imagePullPolicy"], p.ImagePullPolicy), p.ImagePullPolicy, defaultPullPolicy(image)),
		Command:         object.StringList(c["command"], p.Command),
		Args:            object.StringList(c["args"], p.Args),
		WorkingDir:      object.String(c["workingDir"], p.WorkingDir),
		Requests:        quantitiesIn(object.Field(c, "resources", "requests"), p.Requests),
		Limits:          quantitiesIn(object.Field(c, "resources", "limits"), p.Limits),
		StartupProbe:    probeIn(object.Fields(c, "startupProbe"), p.StartupProbe),
		ReadinessProbe:  probeIn(object.Fields(c, "readinessProbe"), p.ReadinessProbe),
		LivenessProbe:   probeIn(object.Fields(c, "livenessProbe"), p.LivenessProbe),
		SecurityContext: containerSecurityIn(object.Fields(c, "securityContext"), p.SecurityContext),
		RestartPolicy:   object.String(c["restartPolicy"], p.RestartPolicy),
	}
	for i, e := range object.Items(c, "env") {
		var pe EnvVar
		if i < len(p.Env) && p.Env[i].Name.ValueString() == fmt.Sprint(e["name"]) {
			pe = p.Env[i]
		}
		out.Env = append(out.Env, envIn(e, pe))
	}
	if out.Env == nil && p.Env != nil && len(p.Env) == 0 {
		out.Env = p.Env
	}
	for i, port := range object.Items(c, "ports") {
		var pp Port
		if i < len(p.Ports) {
			pp = p.Ports[i]
		}
		out.Ports = append(out.Ports, Port{
			Name: object.String(port["name"], pp.Name), ContainerPort: object.Int64(port["containerPort"]),
			Protocol: defaulted(object.String(port["protocol"], pp.Protocol), pp.Protocol, "TCP"),
			HostPort: object.Int64(port["hostPort"]),
		})
	}
	if out.Ports == nil && p.Ports != nil && len(p.Ports) == 0 {
		out.Ports = p.Ports
	}
	for i, m := range object.Items(c, "volumeMounts") {
		var pm VolumeMount
		if i < len(p.VolumeMounts) {
			pm = p.VolumeMounts[i]
		}
		out.VolumeMounts = append(out.VolumeMounts, VolumeMount{
			Name: object.String(m["name"], pm.Name), MountPath: object.String(m["mountPath"], pm.MountPath),
			SubPath: object.String(m["subPath"], pm.SubPath), ReadOnly: boolKeep(m["readOnly"], pm.ReadOnly),
		})
	}
	if out.VolumeMounts == nil && p.VolumeMounts != nil && len(p.VolumeMounts) == 0 {
		out.VolumeMounts = p.VolumeMounts
	}
	return out
}

// defaultPullPolicy is the API server's default for an image.
func defaultPullPolicy(image string) string {
	ref := image
	if i := strings.LastIndex(ref, "@"); i >= 0 {
		return "IfNotPresent" // by digest
	}
	if i := strings.LastIndex(ref, "/"); i >= 0 {
		ref = ref[i+1:]
	}
	if i := strings.LastIndex(ref, ":"); i < 0 || ref[i+1:] == "latest" {
		return "Always"
	}
	return "IfNotPresent"
}

// defaulted is v, or null when the user left the field unset (prior null)
// and v is the server's default.
func defaulted(v, prior types.String, def string) types.String {
	if prior.IsNull() && v.ValueString() == def {
		return types.StringNull()
	}
	return v
}

// defaultedInt is defaulted for integers.
func defaultedInt(v, prior types.Int64, def int64) types.Int64 {
	if prior.IsNull() && !v.IsNull() && v.ValueInt64() == def {
		return types.Int64Null()
	}
	return v
}

func boolIn(v any) types.Bool {
	if b, ok := v.(bool); ok {
		return types.BoolValue(b)
	}
	return types.BoolNull()
}

// boolKeep reads a bool whose absence means false: an absent field keeps a
// prior false, so `read_only = false` does not diff against no field.
func boolKeep(v any, prior types.Bool) types.Bool {
	if b, ok := v.(bool); ok {
		if !b && prior.IsNull() {
			return types.BoolNull() // explicit false is the default
		}
		return types.BoolValue(b)
	}
	if object.Known(prior) && !prior.ValueBool() {
		return prior
	}
	return types.BoolNull()
}

func quantitiesIn(v any, prior types.Map) types.Map {
	m, _ := v.(map[string]any)
	if len(m) == 0 {
		return object.StringMap(nil, prior)
	}
	priorElems := map[string]attr.Value{}
	if object.Known(prior) {
		priorElems = prior.Elements()
	}
	elems := make(map[string]attr.Value, len(m))
	for k, q := range m {
		ps, _ := priorElems[k].(types.String)
		if ps.IsUnknown() {
			ps = types.StringNull()
		}
		elems[k] = object.Quantity(q, ps)
	}
	return types.MapValueMust(types.StringType, elems)
}

func envIn(e map[string]any, p EnvVar) EnvVar {
	out := EnvVar{Name: types.StringValue(fmt.Sprint(e["name"])), Value: object.String(e["value"], p.Value)}
	vf := object.Fields(e, "valueFrom")
	if vf == nil {
		return out
	}
	var pf EnvSource
	if p.ValueFrom != nil {
		pf = *p.ValueFrom
	}
	src := &EnvSource{}
	keyRef := func(m map[string]any, prior *KeyRef) *KeyRef {
		if m == nil {
			return nil
		}
		var pr KeyRef
		if prior != nil {
			pr = *prior
		}
		return &KeyRef{Name: object.String(m["name"], pr.Name), Key: object.String(m["key"], pr.Key), Optional: boolIn(m["optional"])}
	}
	src.SecretKeyRef = keyRef(object.Fields(vf, "secretKeyRef"), pf.SecretKeyRef)
	src.ConfigMapKeyRef = keyRef(object.Fields(vf, "configMapKeyRef"), pf.ConfigMapKeyRef)
	if f := object.Fields(vf, "fieldRef"); f != nil {
		src.FieldRef = &FieldRef{FieldPath: object.String(f["fieldPath"], types.StringNull())}
	}
	if r := object.Fields(vf, "resourceFieldRef"); r != nil {
		var pr ResourceFieldRef
		if pf.ResourceFieldRef != nil {
			pr = *pf.ResourceFieldRef
		}
		src.ResourceFieldRef = &ResourceFieldRef{
			ContainerName: object.String(r["containerName"], pr.ContainerName),
			Resource:      object.String(r["resource"], pr.Resource),
			Divisor:       object.Quantity(r["divisor"], pr.Divisor),
		}
		if pr.Divisor.IsNull() && src.ResourceFieldRef.Divisor.ValueString() == "1" {
			src.ResourceFieldRef.Divisor = types.StringNull() // the server's default
		}
	}
	out.ValueFrom = src
	return out
}

// Probe defaults the API server fills in.
const (
	defaultPeriod    = 10
	defaultTimeout   = 1
	defaultSuccess   = 1
	defaultFailure   = 3
	defaultHTTPProto = "HTTP"
)

func probeIn(m map[string]any, prior *Probe) *Probe {
	if m == nil {
		return nil
	}
	var p Probe
	if prior != nil {
		p = *prior
	}
	out := &Probe{
		InitialDelaySeconds: defaultedInt(object.Int64(m["initialDelaySeconds"]), p.InitialDelaySeconds, 0),
		PeriodSeconds:       defaultedInt(object.Int64(m["periodSeconds"]), p.PeriodSeconds, defaultPeriod),
		TimeoutSeconds:      defaultedInt(object.Int64(m["timeoutSeconds"]), p.TimeoutSeconds, defaultTimeout),
		SuccessThreshold:    defaultedInt(object.Int64(m["successThreshold"]), p.SuccessThreshold, defaultSuccess),
		FailureThreshold:    defaultedInt(object.Int64(m["failureThreshold"]), p.FailureThreshold, defaultFailure),
	}
	if h := object.Fields(m, "httpGet"); h != nil {
		var ph HTTPGet
		if p.HTTPGet != nil {
			ph = *p.HTTPGet
		}
		out.HTTPGet = &HTTPGet{Path: object.String(h["path"], ph.Path), Port: portIn(h["port"]),
			Scheme: defaulted(object.String(h["scheme"], ph.Scheme), ph.Scheme, defaultHTTPProto)}
	}
	if s := object.Fields(m, "tcpSocket"); s != nil {
		out.TCPSocket = &TCPSocket{Port: portIn(s["port"])}
	}
	if e := object.Fields(m, "exec"); e != nil {
		var pe ExecAction
		if p.Exec != nil {
			pe = *p.Exec
		}
		out.Exec = &ExecAction{Command: object.StringList(e["command"], pe.Command)}
	}
	if g := object.Fields(m, "grpc"); g != nil {
		var pg GRPCAction
		if p.GRPC != nil {
			pg = *p.GRPC
		}
		out.GRPC = &GRPCAction{Port: object.Int64(g["port"]), Service: object.String(g["service"], pg.Service)}
	}
	return out
}

func portIn(v any) types.String {
	if v == nil {
		return types.StringNull()
	}
	if f, ok := v.(float64); ok {
		return types.StringValue(fmt.Sprint(int64(f)))
	}
	return types.StringValue(fmt.Sprint(v))
}

func containerSecurityIn(m map[string]any, prior *ContainerSecurityContext) *ContainerSecurityContext {
	if len(m) == 0 && prior == nil {
		return nil
	}
	var p ContainerSecurityContext
	if prior != nil {
		p = *prior
	}
	out := &ContainerSecurityContext{
		RunAsUser: object.Int64(m["runAsUser"]), RunAsGroup: object.Int64(m["runAsGroup"]),
		RunAsNonRoot: boolIn(m["runAsNonRoot"]), Privileged: boolIn(m["privileged"]),
		ReadOnlyRootFilesystem:   boolIn(m["readOnlyRootFilesystem"]),
		AllowPrivilegeEscalation: boolIn(m["allowPrivilegeEscalation"]),
		CapabilitiesAdd:          object.StringList(object.Field(m, "capabilities", "add"), p.CapabilitiesAdd),
		CapabilitiesDrop:         object.StringList(object.Field(m, "capabilities", "drop"), p.CapabilitiesDrop),
	}
	if prior == nil && out.RunAsUser.IsNull() && out.RunAsGroup.IsNull() && out.RunAsNonRoot.IsNull() && out.Privileged.IsNull() &&
		out.ReadOnlyRootFilesystem.IsNull() && out.AllowPrivilegeEscalation.IsNull() && out.CapabilitiesAdd == nil && out.CapabilitiesDrop == nil {
		return nil // only fields the overlay carries
	}
	return out
}

// defaultMode is the API server's default file mode of ConfigMap and Secret volumes (0644).
const defaultMode = 0o644

func volumeIn(v map[string]any, prior *Volume) Volume {
	var p Volume
	if prior != nil {
		p = *prior
	}
	out := Volume{Name: types.StringValue(fmt.Sprint(v["name"]))}
	if e := object.Fields(v, "emptyDir"); e != nil {
		var pe EmptyDir
		if p.EmptyDir != nil {
			pe = *p.EmptyDir
		}
		out.EmptyDir = &EmptyDir{Medium: object.String(e["medium"], pe.Medium), SizeLimit: object.Quantity(e["sizeLimit"], pe.SizeLimit)}
	}
	if c := object.Fields(v, "persistentVolumeClaim"); c != nil {
		var pc ClaimSource
		if p.PersistentVolumeClaim != nil {
			pc = *p.PersistentVolumeClaim
		}
		out.PersistentVolumeClaim = &ClaimSource{ClaimName: object.String(c["claimName"], pc.ClaimName), ReadOnly: boolKeep(c["readOnly"], pc.ReadOnly)}
	}
	if c := object.Fields(v, "configMap"); c != nil {
		var pc ConfigMapSource
		if p.ConfigMap != nil {
			pc = *p.ConfigMap
		}
		out.ConfigMap = &ConfigMapSource{Name: object.String(c["name"], pc.Name), Optional: boolIn(c["optional"]),
			DefaultMode: defaultedInt(object.Int64(c["defaultMode"]), pc.DefaultMode, defaultMode),
			Items:       itemsIn(object.Items(c, "items"), pc.Items)}
	}
	if s := object.Fields(v, "secret"); s != nil {
		var ps SecretSource
		if p.Secret != nil {
			ps = *p.Secret
		}
		out.Secret = &SecretSource{SecretName: object.String(s["secretName"], ps.SecretName), Optional: boolIn(s["optional"]),
			DefaultMode: defaultedInt(object.Int64(s["defaultMode"]), ps.DefaultMode, defaultMode),
			Items:       itemsIn(object.Items(s, "items"), ps.Items)}
	}
	if h := object.Fields(v, "hostPath"); h != nil {
		var ph HostPathSource
		if p.HostPath != nil {
			ph = *p.HostPath
		}
		out.HostPath = &HostPathSource{Path: object.String(h["path"], ph.Path), Type: object.String(h["type"], ph.Type)}
	}
	return out
}

func itemsIn(live []map[string]any, prior []KeyPath) []KeyPath {
	if len(live) == 0 {
		if prior != nil && len(prior) == 0 {
			return prior
		}
		return nil
	}
	out := make([]KeyPath, len(live))
	for i, it := range live {
		out[i] = KeyPath{Key: types.StringValue(fmt.Sprint(it["key"])), Path: types.StringValue(fmt.Sprint(it["path"]))}
	}
	return out
}

// documentIn reads a JSON-valued attribute (affinity) back.
func documentIn(live any, prior types.String) types.String {
	m, _ := live.(map[string]any)
	if len(m) == 0 {
		return types.StringNull()
	}
	var priorDoc map[string]any
	if object.Known(prior) {
		priorDoc, _ = Decode[affinity](prior.ValueString())
	}
	s, ok := readDocument(prior.ValueString(), priorDoc, m)
	if !ok {
		return prior
	}
	return types.StringValue(s)
}

// overlayIn reads pod_template back: the live values at the fields the
// prior overlay sets. Without a prior overlay (on import) it stays null.
func overlayIn(tmpl map[string]any, prior types.String) types.String {
	if !object.Known(prior) {
		return prior
	}
	doc, err := Decode[podTemplate](prior.ValueString())
	if err != nil {
		return prior
	}
	live := project(doc, tmpl, "")
	if live == nil {
		live = map[string]any{}
	}
	s, ok := readDocument(prior.ValueString(), doc, live)
	if !ok {
		return prior
	}
	return types.StringValue(s)
}

func tolerationList(spec map[string]any) []any {
	l, _ := spec["tolerations"].([]any)
	return l
}
