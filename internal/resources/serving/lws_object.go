package serving

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/modelcache"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// A leader or worker template to and from the object's unstructured
// fields. What the group adds to a template itself — the model cache's
// volume and mount, the serving block's startup probe — is written into
// the model server's container (the shorthand's, else the first) and left
// out when the template is read back, so it never shows as a container's
// own attribute.

// templateOut builds a PodTemplateSpec from the template, the cache's
// volume and the model server's probes (container field → probe).
func templateOut(t *podTemplateModel, cache *modelCacheModel, probes map[string]any) map[string]any {
	tmpl := t.Template
	if t.shorthand() {
		tmpl.Containers = append([]podtemplate.Container{t.shorthandContainer()}, t.Containers...)
	}
	obj := tmpl.Object()
	spec := object.Fields(obj, "spec")
	if spec == nil {
		spec = map[string]any{}
		obj["spec"] = spec
	}
	containers, _ := spec["containers"].([]any)
	var server map[string]any
	if len(containers) > 0 {
		server, _ = containers[0].(map[string]any)
	}
	if server == nil {
		return obj // Validate has refused a template without containers
	}
	if cache != nil {
		vol, mount, err := cache.cache().Mount(modelcache.DefaultVolumeName)
		if err == nil { // Validate has refused an incomplete cache
			mounts, _ := server["volumeMounts"].([]any)
			server["volumeMounts"] = append([]any{mustUnstructured(&mount)}, mounts...)
			vols, _ := spec["volumes"].([]any)
			spec["volumes"] = append([]any{mustUnstructured(&vol)}, vols...)
		}
	}
	for field, probe := range probes {
		server[field] = probe
	}
	return obj
}

// templateIn reads a live pod template into the model. prior (nil on
// import) decides the form: a template written with the shorthand is read
// back into it, one written with containers into the shared model. An
// import uses the shorthand only when it reproduces the template exactly
// (one container with nothing but what the shorthand says), else the
// shared model with the live containers' own names and pod_template for
// what no typed attribute carries. cached and probed say whether the group
// adds the model cache and the startup probe, which are left out.
func templateIn(tmpl map[string]any, prior *podTemplateModel, cached, probed bool) *podTemplateModel {
	if tmpl == nil {
		return nil
	}
	own := ownTemplate(tmpl, serverName(tmpl, prior), cached, probed)
	switch {
	case prior == nil:
		if t := shorthandIn(own, nil); t != nil && reproduces(own, t) {
			return t
		}
		return fullIn(own, nil)
	case prior.shorthand():
		return shorthandIn(own, prior)
	}
	return fullIn(own, prior)
}

// serverName is the model server's container in a live template: the
// shorthand's, the first of prior's containers, else the first live one.
func serverName(tmpl map[string]any, prior *podTemplateModel) string {
	switch {
	case prior.shorthand():
		return prior.containerName()
	case prior != nil && len(prior.Containers) > 0:
		return prior.Containers[0].Name.ValueString()
	}
	if cs := object.Items(tmpl, "spec", "containers"); len(cs) > 0 {
		name, _ := cs[0]["name"].(string)
		return name
	}
	return ""
}

// ownTemplate is a copy of tmpl without what the group adds: the cache's
// volume and its mount in the server container, and that container's
// startup probe.
func ownTemplate(tmpl map[string]any, server string, cached, probed bool) map[string]any {
	own := runtime.DeepCopyJSONValue(tmpl).(map[string]any)
	if !cached && !probed {
		return own
	}
	spec := object.Fields(own, "spec")
	if spec == nil {
		return own
	}
	if cached {
		spec["volumes"] = without(object.List(spec, "volumes"), "name", modelcache.DefaultVolumeName)
		if len(spec["volumes"].([]any)) == 0 {
			delete(spec, "volumes")
		}
	}
	for _, c := range object.Items(own, "spec", "containers") {
		if c["name"] != server {
			continue
		}
		if cached {
			c["volumeMounts"] = without(object.List(c, "volumeMounts"), "name", modelcache.DefaultVolumeName)
			if len(c["volumeMounts"].([]any)) == 0 {
				delete(c, "volumeMounts")
			}
		}
		if probed {
			for _, field := range serverProbeFields {
				delete(c, field)
			}
		}
	}
	return own
}

// serverProbeFields are the model server's probes, all the group's own
// when it serves (serverProbes).
var serverProbeFields = []string{"startupProbe", "livenessProbe", "readinessProbe"}

// without is list without its elements whose key is value.
func without(list []any, key, value string) []any {
	out := []any{}
	for _, el := range list {
		if m, ok := el.(map[string]any); ok && m[key] == value {
			continue
		}
		out = append(out, el)
	}
	return out
}

// fullIn reads the template into the shared model.
func fullIn(own map[string]any, prior *podTemplateModel) *podTemplateModel {
	var p *podtemplate.Template
	if prior != nil {
		p = &prior.Template
	}
	t := nullShorthand()
	t.Template = *podtemplate.Read(own, p)
	return t
}

func nullShorthand() *podTemplateModel {
	return &podTemplateModel{ContainerName: types.StringNull(), Image: types.StringNull(), Env: types.MapNull(types.StringType),
		GPUs: types.Int64Null(), CPU: types.StringNull(), Memory: types.StringNull()}
}

// shorthandIn reads the shorthand's container (the one of its name, else
// the first) and the template's other fields; other containers are left to
// whoever manages them. Nil when the template has no container.
func shorthandIn(own map[string]any, prior *podTemplateModel) *podTemplateModel {
	var p podTemplateModel
	if prior != nil {
		p = *prior
	} else {
		p = *nullShorthand()
	}
	c := mainContainer(own, p.containerName())
	if c == nil {
		return nil
	}
	t := &podTemplateModel{
		// Adopted from the live object; left null for the default name.
		ContainerName: object.String(c["name"], p.ContainerName),
		Image:         object.String(c["image"], p.Image),
		Command:       object.StringList(c["command"], p.Command),
		Args:          object.StringList(c["args"], p.Args),
		CPU:           object.Quantity(object.Field(c, "resources", "requests", "cpu"), p.CPU),
		Memory:        object.Quantity(object.Field(c, "resources", "requests", "memory"), p.Memory),
	}
	// Injected variables are not the user's unless they were set.
	priorEnv := object.MapOut(p.Env)
	env := map[string]any{}
	for _, e := range object.Items(c, "env") {
		name, _ := e["name"].(string)
		if _, mine := priorEnv[name]; strings.HasPrefix(name, lwsEnvPrefix) && !mine {
			continue
		}
		if _, ref := e["valueFrom"]; ref {
			// A Secret, ConfigMap or field reference is not a value the
			// shorthand's env map can carry: read as "" it would be written
			// back as an empty literal.
			continue
		}
		v, _ := e["value"].(string)
		env[name] = v
	}
	t.Env = object.StringMap(env, p.Env)
	if p.ContainerName.IsNull() && t.ContainerName.ValueString() == containerName {
		t.ContainerName = types.StringNull()
	}
	gpus := object.Field(c, "resources", "limits", capacity.DefaultGPUResource)
	if gpus == nil {
		gpus = object.Field(c, "resources", "requests", capacity.DefaultGPUResource)
	}
	t.GPUs = types.Int64Null()
	if g := object.Quantity(gpus, types.StringNull()); !g.IsNull() {
		if q, err := validators.ParseQuantity(g.ValueString()); err == nil {
			t.GPUs = types.Int64Value(q.Value())
		}
	}
	rest := runtime.DeepCopyJSONValue(own).(map[string]any)
	delete(object.Fields(rest, "spec"), "containers")
	var pt *podtemplate.Template
	if prior != nil {
		pt = &p.Template
		pt.Containers = nil
	}
	t.Template = *podtemplate.Read(rest, pt)
	return t
}

// reproduces says whether the shorthand t writes exactly the live template
// own: one container, every field of it carried with its live value.
func reproduces(own map[string]any, t *podTemplateModel) bool {
	live := object.Items(own, "spec", "containers")
	if len(live) != 1 {
		return false
	}
	tmpl := t.Template
	tmpl.Containers = []podtemplate.Container{t.shorthandContainer()}
	for _, p := range podtemplate.Paths(podtemplate.Remainder(own, &tmpl)) {
		if strings.HasPrefix(p, "spec.containers") {
			return false
		}
	}
	written := object.Items(tmpl.Object(), "spec", "containers")
	return len(written) == 1 && subset(written[0], live[0])
}

// subset says whether every value of want is in have, equal.
func subset(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !subset(v, h[k]) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !subset(w[i], h[i]) {
				return false
			}
		}
		return true
	}
	return have != nil && fmt.Sprint(want) == fmt.Sprint(have)
}

// mainContainer is the template's container of the given name (containerName
// when ""), or its first.
func mainContainer(tmpl map[string]any, name ...string) map[string]any {
	want := containerName
	if len(name) > 0 && name[0] != "" {
		want = name[0]
	}
	containers := object.Items(tmpl, "spec", "containers")
	for _, c := range containers {
		if c["name"] == want {
			return c
		}
	}
	if len(containers) > 0 {
		return containers[0]
	}
	return nil
}

func sortedNames(m map[string]any) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// modelCacheIn reads the cache's volume (named modelcache.DefaultVolumeName) back.
func modelCacheIn(tmpl map[string]any, prior *modelCacheModel) *modelCacheModel {
	var vol map[string]any
	for _, v := range object.Items(tmpl, "spec", "volumes") {
		if v["name"] == modelcache.DefaultVolumeName {
			vol = v
		}
	}
	if vol == nil {
		return nil
	}
	var p modelCacheModel
	if prior != nil {
		p = *prior
	}
	var mount map[string]any
	for _, c := range object.Items(tmpl, "spec", "containers") {
		for _, m := range object.Items(c, "volumeMounts") {
			if m["name"] == modelcache.DefaultVolumeName && mount == nil {
				mount = m
			}
		}
	}
	out := &modelCacheModel{
		MountPath: object.String(mount["mountPath"], p.MountPath),
		ClaimName: types.StringNull(), HostPath: types.StringNull(),
	}
	switch {
	case object.Fields(vol, "persistentVolumeClaim") != nil:
		out.Mode = types.StringValue(modelcache.ModePVC)
		out.ClaimName = object.String(object.Field(vol, "persistentVolumeClaim", "claimName"), p.ClaimName)
		out.SubPath = object.String(mount["subPath"], p.SubPath)
	case object.Fields(vol, "hostPath") != nil:
		out.Mode = types.StringValue(modelcache.ModeNodeLocal)
		full, _ := object.Field(vol, "hostPath", "path").(string)
		out.HostPath = object.String(path.Dir(full), p.HostPath)
		out.SubPath = object.String(path.Base(full), p.SubPath)
	default:
		return prior
	}
	return out
}
