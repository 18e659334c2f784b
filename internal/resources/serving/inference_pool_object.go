package serving

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
)

// The InferencePool and the picker's objects, both ways.

// pickerName is the name of the picker's objects.
func (m *inferencePoolModel) pickerName() string { return m.Name.ValueString() + "-epp" }

// inferencePoolFields is the pool's spec: selector, ports, protocol, and the
// picker's Service as its endpointPickerRef.
func inferencePoolFields(m *inferencePoolModel) map[string]any {
	labels := map[string]any{}
	for k, v := range m.Selector.Elements() {
		if s, ok := v.(types.String); ok {
			labels[k] = s.ValueString()
		}
	}
	var ports []any
	for _, p := range m.TargetPorts {
		ports = append(ports, map[string]any{"number": p.ValueInt64()})
	}
	return map[string]any{"spec": map[string]any{
		"selector":    map[string]any{"matchLabels": labels},
		"targetPorts": ports,
		"appProtocol": m.AppProtocol.ValueString(),
		"endpointPickerRef": map[string]any{
			"kind": "Service", "name": m.pickerName(),
			"port":        map[string]any{"number": m.Port.ValueInt64()},
			"failureMode": m.FailureMode.ValueString(),
		},
	}}
}

// readInferencePool reads the pool's spec into m. The picker's attributes
// come from its Deployment (readPicker); picker_port from the pool's
// endpointPickerRef.
func readInferencePool(live map[string]any, m *inferencePoolModel) {
	spec := object.Fields(live, "spec")
	m.Selector = object.StringMap(object.Field(spec, "selector", "matchLabels"), m.Selector)
	m.TargetPorts = nil
	for _, p := range object.Items(spec, "targetPorts") {
		m.TargetPorts = append(m.TargetPorts, object.Int64(p["number"]))
	}
	m.AppProtocol = object.String(spec["appProtocol"], m.AppProtocol)
	ref := object.Fields(spec, "endpointPickerRef")
	m.FailureMode = object.String(ref["failureMode"], m.FailureMode)
	m.Port = object.Int64(object.Field(ref, "port", "number"))
	if name, _ := ref["name"].(string); name != "" && m.Name.ValueString() != "" && name != m.Name.ValueString()+"-epp" {
		m.Port = types.Int64Value(-1) // another picker: shown as a diff, the apply points the pool back at its own
	}
	m.derive()
}

// derive sets the computed names from name, namespace and picker_port.
func (m *inferencePoolModel) derive() {
	if !object.Known(m.Name) {
		return
	}
	m.PickerName = types.StringValue(m.pickerName())
	if object.Known(m.Namespace) && object.Known(m.Port) {
		m.Endpoint = types.StringValue(fmt.Sprintf("%s.%s.svc:%d", m.pickerName(), m.Namespace.ValueString(), m.Port.ValueInt64()))
	}
}

// pickerManagedArgs are the picker's flags this resource sets, in order.
func (m *inferencePoolModel) pickerManagedArgs() []string {
	args := []string{
		"--pool-name=" + m.Name.ValueString(),
		"--pool-namespace=" + m.Namespace.ValueString(),
		"--pool-group=" + inferencePoolKind.Group,
		fmt.Sprintf("--grpc-port=%d", m.Port.ValueInt64()),
		fmt.Sprintf("--grpc-health-port=%d", pickerHealthPort),
		fmt.Sprintf("--metrics-port=%d", pickerMetricsPort),
		"--secure-serving=" + strconv.FormatBool(m.Secure.ValueBool()),
	}
	if object.Known(m.LogLevel) {
		args = append(args, fmt.Sprintf("--zap-log-level=%d", m.LogLevel.ValueInt64()))
	}
	return args
}

// pickerPodTemplate is the picker's pod template: picker_template with the
// epp container filled in (first when the template does not list it).
func pickerPodTemplate(m *inferencePoolModel) map[string]any {
	tmpl := map[string]any{}
	if m.Template != nil {
		tmpl = m.Template.Object()
	}
	rayChild(rayChild(tmpl, "metadata"), "labels")[pickerLabel] = m.Name.ValueString()
	spec := rayChild(tmpl, "spec")
	spec["serviceAccountName"] = m.pickerName()
	containers, _ := spec["containers"].([]any)
	var c map[string]any
	for _, x := range containers {
		if cm, ok := x.(map[string]any); ok && cm["name"] == pickerContainer {
			c = cm
		}
	}
	if c == nil {
		c = map[string]any{"name": pickerContainer}
		containers = append([]any{c}, containers...)
	}
	spec["containers"] = containers
	c["image"] = m.Image.ValueString()
	args := m.pickerManagedArgs()
	for _, a := range m.Args {
		args = append(args, a.ValueString())
	}
	c["args"] = toAny(args)
	c["ports"] = []any{
		map[string]any{"name": "grpc", "containerPort": m.Port.ValueInt64(), "protocol": "TCP"},
		map[string]any{"name": "grpc-health", "containerPort": int64(pickerHealthPort), "protocol": "TCP"},
		map[string]any{"name": "metrics", "containerPort": int64(pickerMetricsPort), "protocol": "TCP"},
	}
	// Ready once the picker has read its pool; alive while its health
	// server answers at all (service "": the process).
	c["readinessProbe"] = map[string]any{"grpc": map[string]any{"port": int64(pickerHealthPort), "service": pickerHealthService},
		"periodSeconds": int64(2), "failureThreshold": int64(3)}
	c["livenessProbe"] = map[string]any{"grpc": map[string]any{"port": int64(pickerHealthPort), "service": ""},
		"initialDelaySeconds": int64(5), "periodSeconds": int64(10), "failureThreshold": int64(3)}
	return tmpl
}

// defaultPullPolicyOf is the API server's default imagePullPolicy for an
// image: Always for :latest or no tag, else IfNotPresent.
func defaultPullPolicyOf(image string) string {
	name := image[strings.LastIndex(image, "/")+1:]
	if strings.Contains(name, "@") {
		return "IfNotPresent"
	}
	if _, tag, ok := strings.Cut(name, ":"); !ok || tag == "latest" {
		return "Always"
	}
	return "IfNotPresent"
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// pickerDeploymentFields is the picker's Deployment (the apply adds the
// owner reference to the pool, as to the picker's other objects).
func pickerDeploymentFields(m *inferencePoolModel) map[string]any {
	return map[string]any{"spec": map[string]any{
		"replicas": m.Replicas.ValueInt64(),
		"selector": map[string]any{"matchLabels": map[string]any{pickerLabel: m.Name.ValueString()}},
		"template": pickerPodTemplate(m),
	}}
}

func pickerServiceFields(m *inferencePoolModel) map[string]any {
	return map[string]any{"spec": map[string]any{
		"type":     "ClusterIP",
		"selector": map[string]any{pickerLabel: m.Name.ValueString()},
		"ports": []any{map[string]any{"name": "grpc-ext-proc", "protocol": "TCP", "port": m.Port.ValueInt64(),
			"targetPort": m.Port.ValueInt64(), "appProtocol": "http2"}},
	}}
}

// pickerRules are the Role's rules: what v1.6.0's picker reads (its
// controller-runtime cache watches the pods of the pool's namespace and the
// pool by name; it writes nothing, and runs without leader election).
var pickerRules = []any{
	map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": []any{"get", "list", "watch"}},
	map[string]any{"apiGroups": []any{inferencePoolKind.Group}, "resources": []any{"inferencepools"}, "verbs": []any{"get", "list", "watch"}},
}

func pickerRoleBindingFields(m *inferencePoolModel) map[string]any {
	return map[string]any{
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": m.pickerName()},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": m.pickerName(), "namespace": m.Namespace.ValueString()}},
	}
}

// readPicker reads the picker's Deployment into m; live nil (the
// Deployment is gone) reads as no picker image, so the plan shows the
// change and the apply recreates it.
func readPicker(live map[string]any, m *inferencePoolModel, importing bool) {
	if live == nil {
		m.Image = types.StringValue("")
		return
	}
	spec := object.Fields(live, "spec")
	m.Replicas = object.Int64(spec["replicas"])
	tmpl := deepCopyMap(object.Fields(spec, "template"))
	tspec := object.Fields(tmpl, "spec")
	if tspec["serviceAccountName"] == m.pickerName() {
		delete(tspec, "serviceAccountName")
		delete(tspec, "serviceAccount")
	}
	if labels := object.Fields(tmpl, "metadata", "labels"); labels != nil {
		delete(labels, pickerLabel)
		if len(labels) == 0 {
			delete(object.Fields(tmpl, "metadata"), "labels")
		}
	}
	var c map[string]any
	for _, x := range object.Items(tspec, "containers") {
		if x["name"] == pickerContainer {
			c = x
		}
	}
	if c == nil {
		m.Image = types.StringValue("") // the picker container is gone: the apply puts it back
	} else {
		m.Image = object.String(c["image"], m.Image)
		readPickerArgs(object.StringList(c["args"], nil), m)
		// The server's default pull policy for the picker's image, which
		// the template's container does not carry: not the user's.
		if image, _ := c["image"].(string); c["imagePullPolicy"] == defaultPullPolicyOf(image) {
			if pc := m.Template.Container(pickerContainer); pc == nil || !object.Known(pc.ImagePullPolicy) {
				delete(c, "imagePullPolicy")
			}
		}
		for _, k := range []string{"image", "args", "ports", "readinessProbe", "livenessProbe"} {
			delete(c, k)
		}
	}
	priorT := m.Template
	if priorT == nil && !importing {
		priorT = &podtemplate.Template{}
	}
	t := podtemplate.Read(tmpl, priorT)
	if t != nil && (m.Template == nil || m.Template.Container(pickerContainer) == nil) {
		t.Containers = slices.DeleteFunc(t.Containers, func(x podtemplate.Container) bool {
			return x.Name.ValueString() == pickerContainer && rayEmptyContainer(x)
		})
		if len(t.Containers) == 0 {
			t.Containers = nil
		}
	}
	if t != nil && m.Template == nil && reflect.DeepEqual(t.Object(), map[string]any{"spec": map[string]any{}}) {
		t = nil
	}
	m.Template = t
}

// readPickerArgs splits the picker's live args into the managed ones
// (secure serving, log level) and picker_args.
func readPickerArgs(live []types.String, m *inferencePoolModel) {
	var extra []types.String
	m.LogLevel = types.Int64Null()
	for _, a := range live {
		s := a.ValueString()
		name, value, _ := strings.Cut(s, "=")
		switch name {
		case "--pool-name", "--pool-namespace", "--pool-group", "--grpc-port", "--grpc-health-port", "--metrics-port":
			// Set from name, namespace and picker_port; a live change shows
			// through them only when it breaks the picker (its readiness).
		case "--secure-serving":
			m.Secure = types.BoolValue(value != "false")
		case "--zap-log-level":
			if n, err := strconv.ParseInt(value, 10, 64); err == nil {
				m.LogLevel = types.Int64Value(n)
			} else {
				extra = append(extra, a)
			}
		default:
			extra = append(extra, a)
		}
	}
	if len(extra) == 0 && m.Args != nil {
		extra = []types.String{} // an empty list stays empty, not null
	}
	m.Args = extra
}

func deepCopyMap(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return deepCopyMap(x)
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = deepCopyValue(x[i])
		}
		return out
	}
	return v
}
