package podtemplate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// Validate checks the template across attributes, without I/O; at is the
// template's attribute path. extraVolumes are volumes the resource adds
// itself (a model cache), which mounts may name. Unknown values are skipped:
// Terraform validates again during apply, with every value known.
func Validate(t *Template, at path.Path, extraVolumes ...string) diag.Diagnostics {
	var diags diag.Diagnostics
	if t == nil {
		return diags
	}
	bad := func(p path.Path, format string, args ...any) {
		diags.AddAttributeError(p, "Invalid pod template", p.String()+": "+fmt.Sprintf(format, args...))
	}
	overlay := t.overlay()

	volumes := map[string]bool{}
	for _, v := range extraVolumes {
		volumes[v] = true
	}
	for _, v := range object.Items(overlay, "spec", "volumes") {
		if n, ok := v["name"].(string); ok {
			volumes[n] = true
		}
	}
	for i, v := range t.Volumes {
		p := at.AtName("volumes").AtListIndex(i)
		name := v.Name.ValueString()
		if !object.Known(v.Name) {
			continue
		}
		if seen := findVolume(t.Volumes[:i], name); seen != nil {
			bad(p.AtName("name"), "volume %q is declared twice", name)
		}
		sources := 0
		for _, set := range []bool{v.EmptyDir != nil, v.PersistentVolumeClaim != nil, v.ConfigMap != nil, v.Secret != nil, v.HostPath != nil} {
			if set {
				sources++
			}
		}
		_, inOverlay := overlayVolume(overlay, name)
		switch {
		case sources > 1:
			bad(p, "volume %q has %d sources; set exactly one of empty_dir, persistent_volume_claim, config_map, secret, host_path", name, sources)
		case sources == 0 && !inOverlay:
			bad(p, "volume %q has no source; set one of empty_dir, persistent_volume_claim, config_map, secret, host_path (or give it in pod_template)", name)
		}
		volumes[name] = true
	}

	names := map[string]path.Path{}
	check := func(list []Container, field string, init bool) {
		for i := range list {
			c := &list[i]
			p := at.AtName(field).AtListIndex(i)
			if object.Known(c.Name) {
				if first, dup := names[c.Name.ValueString()]; dup {
					bad(p.AtName("name"), "container name %q is also used at %s", c.Name.ValueString(), first)
				} else {
					names[c.Name.ValueString()] = p
				}
			}
			if !init && object.Known(c.RestartPolicy) {
				bad(p.AtName("restart_policy"), "only init containers have a restart policy (an init container with \"Always\" is a sidecar)")
			}
			diags.Append(validateContainer(c, p, volumes, init && c.RestartPolicy.ValueString() != "Always")...)
		}
	}
	check(t.Containers, "containers", false)
	check(t.InitContainers, "init_containers", true)

	if overlay != nil {
		for _, o := range overlaps(overlay, t.typedObject(), "", "") {
			bad(at.AtName("pod_template"), "sets %s, which a typed attribute sets too; set it in one place", o)
		}
	}
	return diags
}

func overlayVolume(overlay map[string]any, name string) (map[string]any, bool) {
	for _, v := range object.Items(overlay, "spec", "volumes") {
		if v["name"] == name {
			return v, true
		}
	}
	return nil, false
}

// validateContainer checks one container; runsToCompletion marks a plain
// init container, which has no probes.
func validateContainer(c *Container, at path.Path, volumes map[string]bool, runsToCompletion bool) diag.Diagnostics {
	var diags diag.Diagnostics
	bad := func(p path.Path, format string, args ...any) {
		diags.AddAttributeError(p, "Invalid container", p.String()+": "+fmt.Sprintf(format, args...))
	}
	envNames := map[string]bool{}
	for i, e := range c.Env {
		p := at.AtName("env").AtListIndex(i)
		if object.Known(e.Name) {
			if envNames[e.Name.ValueString()] {
				bad(p.AtName("name"), "variable %q is set twice", e.Name.ValueString())
			}
			envNames[e.Name.ValueString()] = true
		}
		if f := e.ValueFrom; f != nil {
			if object.Known(e.Value) {
				bad(p, "set value or value_from, not both")
			}
			n := 0
			for _, set := range []bool{f.SecretKeyRef != nil, f.ConfigMapKeyRef != nil, f.FieldRef != nil, f.ResourceFieldRef != nil} {
				if set {
					n++
				}
			}
			if n != 1 {
				bad(p.AtName("value_from"), "set exactly one of secret_key_ref, config_map_key_ref, field_ref, resource_field_ref")
			}
		}
	}
	ports := map[string]bool{}
	for i, port := range c.Ports {
		if !object.Known(port.ContainerPort) {
			continue
		}
		proto := "TCP"
		if object.Known(port.Protocol) {
			proto = port.Protocol.ValueString()
		}
		k := fmt.Sprintf("%d/%s", port.ContainerPort.ValueInt64(), proto)
		if ports[k] {
			bad(at.AtName("ports").AtListIndex(i), "port %s is listed twice", k)
		}
		ports[k] = true
	}
	mounts := map[string]bool{}
	for i, m := range c.VolumeMounts {
		p := at.AtName("volume_mounts").AtListIndex(i)
		if object.Known(m.Name) && !volumes[m.Name.ValueString()] {
			bad(p.AtName("name"), "no volume named %q in the pod (volumes: %s)", m.Name.ValueString(), sortedKeys(volumes))
		}
		if object.Known(m.MountPath) {
			if mounts[m.MountPath.ValueString()] {
				bad(p.AtName("mount_path"), "%s is mounted twice", m.MountPath.ValueString())
			}
			mounts[m.MountPath.ValueString()] = true
		}
	}
	diags.Append(validateResources(c, at)...)
	for _, pr := range []struct {
		name    string
		probe   *Probe
		oneOnly bool // success_threshold must be 1
	}{{"startup_probe", c.StartupProbe, true}, {"readiness_probe", c.ReadinessProbe, false}, {"liveness_probe", c.LivenessProbe, true}} {
		if pr.probe == nil {
			continue
		}
		p := at.AtName(pr.name)
		if runsToCompletion {
			bad(p, "an init container that runs to completion has no probes")
		}
		n := 0
		for _, set := range []bool{pr.probe.HTTPGet != nil, pr.probe.TCPSocket != nil, pr.probe.Exec != nil, pr.probe.GRPC != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			bad(p, "set exactly one of http_get, tcp_socket, exec, grpc")
		}
		if pr.oneOnly && object.Known(pr.probe.SuccessThreshold) && pr.probe.SuccessThreshold.ValueInt64() != 1 {
			bad(p.AtName("success_threshold"), "must be 1 for a %s", strings.ReplaceAll(pr.name, "_", " "))
		}
	}
	return diags
}

// validateResources checks requests against limits: a request above its
// limit, and extended resources (GPUs) whose request differs from the limit
// or that have no limit, as the API server would refuse them.
func validateResources(c *Container, at path.Path) diag.Diagnostics {
	var diags diag.Diagnostics
	requests, limits := quantities(c.Requests), quantities(c.Limits)
	for name, req := range requests {
		lim, hasLimit := limits[name]
		p := at.AtName("requests").AtMapKey(name)
		switch {
		case extended(name) && !hasLimit:
			diags.AddAttributeError(p, "Invalid container", fmt.Sprintf("%s: %s is an extended resource: it needs a limit (equal to the request)", p, name))
		case extended(name) && req.Cmp(lim) != 0:
			diags.AddAttributeError(p, "Invalid container", fmt.Sprintf("%s: %s is an extended resource: its request (%s) must equal its limit (%s)", p, name, req.String(), lim.String()))
		case hasLimit && req.Cmp(lim) > 0:
			diags.AddAttributeError(p, "Invalid container", fmt.Sprintf("%s: the request %s is above the limit %s", p, req.String(), lim.String()))
		}
	}
	return diags
}

// extended says whether a resource name is an extended resource (outside
// the kubernetes.io domain and not a hugepage or native resource).
func extended(name string) bool {
	if !strings.Contains(name, "/") {
		return false
	}
	return !strings.HasSuffix(strings.SplitN(name, "/", 2)[0], "kubernetes.io")
}

// quantities parses a known map of quantities, skipping what does not parse
// (the attribute's validator reports it).
func quantities(m types.Map) map[string]resource.Quantity {
	out := map[string]resource.Quantity{}
	for k, v := range object.MapOut(m) {
		if q, err := validators.ParseQuantity(fmt.Sprint(v)); err == nil {
			out[k] = q
		}
	}
	return out
}

func sortedKeys(m map[string]bool) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

// Request is what the pod asks the scheduler for of one resource, as the
// scheduler counts it: each container's request (its limit when there is no
// request), the sum of the containers and sidecars, or a plain init
// container's with the sidecars when that is larger.
func (t *Template) Request(name string) resource.Quantity {
	var total, sidecars, maxInit resource.Quantity
	if t == nil {
		return total
	}
	of := func(c *Container) resource.Quantity {
		if q, ok := quantities(c.Requests)[name]; ok {
			return q
		}
		return quantities(c.Limits)[name]
	}
	for i := range t.Containers {
		total.Add(of(&t.Containers[i]))
	}
	for i := range t.InitContainers {
		c := &t.InitContainers[i]
		if c.RestartPolicy.ValueString() == "Always" {
			sidecars.Add(of(c))
		} else if q := of(c); q.Cmp(maxInit) > 0 {
			maxInit = q
		}
	}
	total.Add(sidecars)
	maxInit.Add(sidecars)
	if maxInit.Cmp(total) > 0 {
		return maxInit
	}
	return total
}
