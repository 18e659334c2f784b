package podtemplate

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"sigs.k8s.io/yaml"
)

func liveTemplate(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile("testdata/ray-worker-live.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	// as the dynamic client returns them: integers as int64
	return intsToInt64(m).(map[string]any)
}

func intsToInt64(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = intsToInt64(e)
		}
	case []any:
		for i, e := range x {
			x[i] = intsToInt64(e)
		}
	case float64:
		if x == float64(int64(x)) {
			return int64(x)
		}
	}
	return v
}

// subset reports the paths where want sets a value live does not have;
// lists of named elements are matched by name.
func subset(want, live any, at string) []string {
	switch w := want.(type) {
	case map[string]any:
		l, _ := live.(map[string]any)
		var out []string
		for k, v := range w {
			out = append(out, subset(v, l[k], at+"."+k)...)
		}
		return out
	case []any:
		l, _ := live.([]any)
		var out []string
		for i, el := range w {
			name := elementKey(el, "name")
			var match any
			if name != "" {
				match = find(l, "name", name)
			} else if i < len(l) {
				match = l[i]
			}
			out = append(out, subset(el, match, at+"["+name+"]")...)
		}
		return out
	}
	if !equivalent(want, live) {
		return []string{at}
	}
	return nil
}

// Import of a server-defaulted template: the model carries what the object
// says (requests ≠ limits, volumes, mounts, ports, env from a Secret, a
// sidecar) and none of the server's defaults; writing it back sets nothing
// the live object does not have; a refresh reads the same model.
func TestReadDefaultedTemplate(t *testing.T) {
	live := liveTemplate(t)
	m := Read(live, nil)

	if len(m.Containers) != 2 || m.Containers[0].Name.ValueString() != "ray-worker" || m.Containers[1].Name.ValueString() != "fluentbit" {
		t.Fatalf("containers: %+v", m.Containers)
	}
	w := m.Containers[0]
	checks := map[string]bool{
		"image pull policy left to the default":  w.ImagePullPolicy.IsNull() && m.Containers[1].ImagePullPolicy.IsNull(),
		"request 500m kept apart from limit 1":   mapValue(w.Requests, "cpu") == "500m" && mapValue(w.Limits, "cpu") == "1",
		"GPU limit read":                         mapValue(w.Limits, "nvidia.com/gpu") == "1",
		"port protocol TCP is the default":       len(w.Ports) == 1 && w.Ports[0].Protocol.IsNull() && w.Ports[0].Name.ValueString() == "metrics",
		"env from a Secret":                      len(w.Env) == 3 && w.Env[1].ValueFrom != nil && w.Env[1].ValueFrom.SecretKeyRef.Name.ValueString() == "hf",
		"field ref":                              w.Env[2].ValueFrom.FieldRef.FieldPath.ValueString() == "status.podIP",
		"probe defaults left out, settings kept": w.ReadinessProbe.SuccessThreshold.IsNull() && w.ReadinessProbe.PeriodSeconds.ValueInt64() == 5 && w.ReadinessProbe.Exec != nil,
		"emptyDir {}":                            m.Volumes[0].EmptyDir != nil && m.Volumes[0].EmptyDir.Medium.IsNull(),
		"configMap defaultMode is the default":   m.Volumes[1].ConfigMap != nil && m.Volumes[1].ConfigMap.DefaultMode.IsNull(),
		"memory medium":                          m.Volumes[2].EmptyDir.Medium.ValueString() == "Memory" && m.Volumes[2].EmptyDir.SizeLimit.ValueString() == "2Gi",
		"sidecar's sub path":                     m.Containers[1].VolumeMounts[1].SubPath.ValueString() == "fluent-bit.conf",
		"empty security context is no attribute": m.SecurityContext == nil && w.SecurityContext == nil,
		"labels":                                 mapValue(m.Labels, "app") == "ray",
	}
	for what, ok := range checks {
		if !ok {
			t.Errorf("%s: not as expected", what)
		}
	}

	obj := m.Object()
	if missing := subset(obj, live, ""); len(missing) > 0 {
		t.Errorf("writing the imported model back would change %v", missing)
	}
	for _, absent := range []string{"imagePullPolicy", "terminationMessagePath", "protocol", "defaultMode", "successThreshold", "dnsPolicy", "securityContext"} {
		if b, _ := yaml.Marshal(obj); strings.Contains(string(b), absent+":") {
			t.Errorf("the model writes the server's default %s:\n%s", absent, b)
		}
	}
	if again := Read(live, m); !reflect.DeepEqual(again, m) {
		t.Errorf("a refresh reads another model:\n%+v\n%+v", again, m)
	}
	if diags := Validate(m, path.Root("template")); diags.HasError() {
		t.Errorf("the imported model does not validate: %v", diags)
	}
}

func mapValue(m types.Map, k string) string {
	v, ok := m.Elements()[k].(types.String)
	if !ok {
		return "(none)"
	}
	return v.ValueString()
}

// The user's spellings survive the server's normalisation.
func TestReadKeepsSpellings(t *testing.T) {
	prior := &Template{Containers: []Container{{
		Name: types.StringValue("main"), Image: types.StringValue("vllm/vllm-openai:v0.9.0"),
		Requests:        types.MapValueMust(types.StringType, map[string]attr.Value{"cpu": types.StringValue("1000m"), "memory": types.StringValue("1024Mi")}),
		ImagePullPolicy: types.StringValue("IfNotPresent"),
		Ports:           []Port{{ContainerPort: types.Int64Value(8000), Protocol: types.StringValue("TCP")}},
	}}}
	live := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
		"name": "main", "image": "vllm/vllm-openai:v0.9.0", "imagePullPolicy": "IfNotPresent",
		"resources": map[string]any{"requests": map[string]any{"cpu": "1", "memory": "1Gi"}},
		"ports":     []any{map[string]any{"containerPort": int64(8000), "protocol": "TCP"}},
	}}}}
	got := Read(live, prior)
	c := got.Containers[0]
	if mapValue(c.Requests, "cpu") != "1000m" || mapValue(c.Requests, "memory") != "1024Mi" {
		t.Errorf("requests: %v", c.Requests)
	}
	if c.ImagePullPolicy.ValueString() != "IfNotPresent" || c.Ports[0].Protocol.ValueString() != "TCP" {
		t.Errorf("a default the user wrote is kept: %v %v", c.ImagePullPolicy, c.Ports[0].Protocol)
	}
	live["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["resources"] = map[string]any{"requests": map[string]any{"cpu": "2", "memory": "1Gi"}}
	if got := Read(live, prior); mapValue(got.Containers[0].Requests, "cpu") != "2" {
		t.Errorf("a changed request shows: %v", got.Containers[0].Requests)
	}
}

// The model and the schema agree: a template goes through Terraform's
// state encoding and comes back the same.
func TestSchemaMatchesModel(t *testing.T) {
	ctx := context.Background()
	s := schema.Schema{Attributes: map[string]schema.Attribute{"template": Attribute("t", true)}}
	if diags := s.ValidateImplementation(ctx); diags.HasError() {
		t.Fatalf("schema: %v", diags)
	}
	type model struct {
		Template *Template `tfsdk:"template"`
	}
	in := model{Template: Read(liveTemplate(t), nil)}
	in.Template.PodTemplate = types.StringValue("spec:\n  hostNetwork: true\n")
	state := tfsdk.State{Schema: s, Raw: tftypes.NewValue(s.Type().TerraformType(ctx), nil)}
	if diags := state.Set(ctx, &in); diags.HasError() {
		t.Fatalf("set: %v", diags)
	}
	var out model
	if diags := state.Get(ctx, &out); diags.HasError() {
		t.Fatalf("get: %v", diags)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip through state differs:\n%+v\n%+v", in.Template, out.Template)
	}
}

// ManagedAttribute has the model's shape too, with containers and their
// image optional (the resource fills in its own container).
func TestManagedAttributeMatchesModel(t *testing.T) {
	ctx := context.Background()
	s := schema.Schema{Attributes: map[string]schema.Attribute{"template": ManagedAttribute("t")}}
	if diags := s.ValidateImplementation(ctx); diags.HasError() {
		t.Fatalf("schema: %v", diags)
	}
	type model struct {
		Template *Template `tfsdk:"template"`
	}
	in := model{Template: Read(liveTemplate(t), nil)}
	in.Template.Containers[0].Image = types.StringNull()
	state := tfsdk.State{Schema: s, Raw: tftypes.NewValue(s.Type().TerraformType(ctx), nil)}
	if diags := state.Set(ctx, &in); diags.HasError() {
		t.Fatalf("set: %v", diags)
	}
	var out model
	if diags := state.Get(ctx, &out); diags.HasError() {
		t.Fatalf("get: %v", diags)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip through state differs:\n%+v\n%+v", in.Template, out.Template)
	}
	attr := s.Attributes["template"].(schema.SingleNestedAttribute)
	if c := attr.Attributes["containers"].(schema.ListNestedAttribute); c.Required || c.NestedObject.Attributes["image"].IsRequired() {
		t.Errorf("containers and their image must be optional in ManagedAttribute")
	}
	if c := Attribute("t", true).Attributes["containers"].(schema.ListNestedAttribute); !c.Required || !c.NestedObject.Attributes["image"].IsRequired() {
		t.Errorf("Attribute must keep containers and their image required")
	}
}
