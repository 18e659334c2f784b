package podtemplate

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestDecodeIsStrict(t *testing.T) {
	cases := map[string]string{
		"spec:\n  containers:\n  - name: a\n    imagePullPolicyy: Always\n": `unknown field "spec.containers[0].imagePullPolicyy"`,
		`{"spec": {"hostNetwork": true, "hostNetwork": false}}`:             `key "hostNetwork" already set`,
		"spec:\n  nodeSelector: [a]\n":                                      "cannot unmarshal array",
		"- a\n":                                                             "cannot unmarshal array",
	}
	for in, want := range cases {
		if _, err := Decode[podTemplate](in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Decode(%q) = %v, want an error with %q", in, err, want)
		}
	}
	m, err := Decode[podTemplate]("spec:\n  hostNetwork: true\n  terminationGracePeriodSeconds: 60\n")
	if err != nil || m["spec"].(map[string]any)["terminationGracePeriodSeconds"] != int64(60) {
		t.Fatalf("a valid overlay: %v, %v", m, err)
	}

	// The validator names the attribute path and the field path.
	p := path.Root("head").AtName("template").AtName("pod_template")
	var resp validator.StringResponse
	Overlay().ValidateString(context.Background(), validator.StringRequest{Path: p,
		ConfigValue: types.StringValue("spec:\n  containers:\n  - name: a\n    lifecycl: {}\n")}, &resp)
	if !resp.Diagnostics.HasError() || !strings.Contains(resp.Diagnostics[0].Detail(), `head.template.pod_template: is not a PodTemplateSpec: unknown field "spec.containers[0].lifecycl"`) {
		t.Fatalf("diagnostics: %v", resp.Diagnostics)
	}
	resp = validator.StringResponse{}
	Strict[affinity]("an Affinity").ValidateString(context.Background(), validator.StringRequest{Path: path.Root("affinity"),
		ConfigValue: types.StringValue(`{"nodeAffinity": {"requiredDuringScheduling": {}}}`)}, &resp)
	if !resp.Diagnostics.HasError() || !strings.Contains(resp.Diagnostics[0].Detail(), "nodeAffinity.requiredDuringScheduling") {
		t.Fatalf("affinity diagnostics: %v", resp.Diagnostics)
	}
}

func mainTemplate(overlay string) *Template {
	return &Template{
		Containers: []Container{{Name: types.StringValue("main"), Image: types.StringValue("vllm/vllm-openai:v0.9.0"),
			Env: []EnvVar{{Name: types.StringValue("A"), Value: types.StringValue("1")}}}},
		Volumes:     []Volume{{Name: types.StringValue("cache"), EmptyDir: &EmptyDir{}}},
		PodTemplate: types.StringValue(overlay),
	}
}

// The overlay lies under the typed fields: containers, env and volumes
// merge by name, a sidecar only the overlay has is kept, other fields add.
func TestOverlayMergesUnderTypedFields(t *testing.T) {
	tmpl := mainTemplate(`
spec:
  hostIPC: true
  containers:
  - name: main
    lifecycle:
      preStop: {exec: {command: [sleep, "5"]}}
    env:
    - name: B
      value: "2"
  - name: proxy
    image: envoyproxy/envoy:v1.30
  volumes:
  - name: cache
    emptyDir: {sizeLimit: 1Gi}
`)
	if diags := Validate(tmpl, path.Root("t")); diags.HasError() {
		t.Fatalf("validate: %v", diags)
	}
	obj := tmpl.Object()
	spec := obj["spec"].(map[string]any)
	cs := spec["containers"].([]any)
	if len(cs) != 2 || cs[0].(map[string]any)["name"] != "main" || cs[1].(map[string]any)["name"] != "proxy" {
		t.Fatalf("containers: %v", cs)
	}
	main := cs[0].(map[string]any)
	if main["image"] != "vllm/vllm-openai:v0.9.0" || main["lifecycle"] == nil || len(main["env"].([]any)) != 2 {
		t.Fatalf("main container: %v", main)
	}
	if spec["hostIPC"] != true {
		t.Fatalf("hostIPC: %v", spec)
	}
	vol := spec["volumes"].([]any)[0].(map[string]any)
	if len(spec["volumes"].([]any)) != 1 || vol["emptyDir"].(map[string]any)["sizeLimit"] != "1Gi" {
		t.Fatalf("volumes: %v", spec["volumes"])
	}

	// Read back: the same live values keep the user's text; a change shows.
	if got := Read(obj, tmpl).PodTemplate; got != tmpl.PodTemplate {
		t.Fatalf("overlay read back as %q", got.ValueString())
	}
	spec["hostIPC"] = false
	got := Read(obj, tmpl).PodTemplate.ValueString()
	if !strings.Contains(got, "hostIPC: false") || !strings.Contains(got, "name: proxy") {
		t.Fatalf("a changed overlay field reads as:\n%s", got)
	}
}

func TestOverlayOverlapsTypedFields(t *testing.T) {
	tmpl := mainTemplate("spec:\n  containers:\n  - name: main\n    image: other:1\n  volumes:\n  - name: cache\n    emptyDir: {}\n")
	diags := Validate(tmpl, path.Root("t"))
	var details []string
	for _, d := range diags {
		details = append(details, d.Detail())
	}
	text := strings.Join(details, "\n")
	for _, want := range []string{"t.pod_template: sets spec.containers[name=main].image", "t.pod_template: sets spec.volumes[name=cache].emptyDir"} {
		if !strings.Contains(text, want) {
			t.Errorf("diagnostics lack %q:\n%s", want, text)
		}
	}
}

func quantityMapOf(kv ...string) types.Map {
	elems := map[string]attr.Value{}
	for i := 0; i+1 < len(kv); i += 2 {
		elems[kv[i]] = types.StringValue(kv[i+1])
	}
	return types.MapValueMust(types.StringType, elems)
}

func TestValidate(t *testing.T) {
	tmpl := &Template{
		Containers: []Container{
			{Name: types.StringValue("main"), Image: types.StringValue("x"),
				Requests:      quantityMapOf("cpu", "2", "nvidia.com/gpu", "1"),
				Limits:        quantityMapOf("cpu", "1", "nvidia.com/gpu", "2"),
				VolumeMounts:  []VolumeMount{{Name: types.StringValue("nope"), MountPath: types.StringValue("/data")}},
				RestartPolicy: types.StringValue("Always"),
				Env: []EnvVar{{Name: types.StringValue("A"), Value: types.StringValue("1"),
					ValueFrom: &EnvSource{FieldRef: &FieldRef{FieldPath: types.StringValue("metadata.name")}}}},
				StartupProbe: &Probe{SuccessThreshold: types.Int64Value(2)},
			},
			{Name: types.StringValue("main"), Image: types.StringValue("y")},
		},
		Volumes: []Volume{{Name: types.StringValue("two"), EmptyDir: &EmptyDir{}, HostPath: &HostPathSource{Path: types.StringValue("/x")}}},
	}
	var details []string
	for _, d := range Validate(tmpl, path.Root("template")) {
		details = append(details, d.Detail())
	}
	text := strings.Join(details, "\n")
	for _, want := range []string{
		`template.volumes[0]: volume "two" has 2 sources`,
		`template.containers[1].name: container name "main" is also used at template.containers[0]`,
		`template.containers[0].restart_policy: only init containers`,
		`template.containers[0].env[0]: set value or value_from, not both`,
		`template.containers[0].volume_mounts[0].name: no volume named "nope" in the pod (volumes: two)`,
		`template.containers[0].requests["cpu"]: the request 2 is above the limit 1`,
		`template.containers[0].requests["nvidia.com/gpu"]: nvidia.com/gpu is an extended resource: its request (1) must equal its limit (2)`,
		`template.containers[0].startup_probe: set exactly one of http_get`,
		`template.containers[0].startup_probe.success_threshold: must be 1 for a startup probe`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("diagnostics lack %q", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}

func TestRequest(t *testing.T) {
	tmpl := &Template{
		Containers: []Container{
			{Name: types.StringValue("a"), Limits: quantityMapOf("nvidia.com/gpu", "2")},
			{Name: types.StringValue("b"), Requests: quantityMapOf("cpu", "500m"), Limits: quantityMapOf("cpu", "1")},
		},
		InitContainers: []Container{
			{Name: types.StringValue("sidecar"), RestartPolicy: types.StringValue("Always"), Requests: quantityMapOf("cpu", "250m")},
			{Name: types.StringValue("warm"), Requests: quantityMapOf("cpu", "4")},
		},
	}
	if g := tmpl.Request("nvidia.com/gpu"); g.Value() != 2 {
		t.Errorf("GPUs: %s", g.String())
	}
	if c := tmpl.Request("cpu"); c.String() != "4250m" {
		t.Errorf("CPU: %s (the warm-up init container with the sidecar)", c.String())
	}
}

// An import of a template with fields the typed attributes do not have: they
// go into pod_template, so writing the model back reproduces the object and
// nothing but the server's defaults is left over.
func TestImportRemainder(t *testing.T) {
	live := liveTemplate(t)
	spec := live["spec"].(map[string]any)
	spec["hostIPC"] = true
	spec["volumes"] = append(spec["volumes"].([]any), map[string]any{"name": "datasets", "nfs": map[string]any{"server": "nfs.example", "path": "/datasets"}})
	worker := spec["containers"].([]any)[0].(map[string]any)
	worker["lifecycle"] = map[string]any{"preStop": map[string]any{"exec": map[string]any{"command": []any{"ray", "stop"}}}}
	worker["volumeMounts"] = append(worker["volumeMounts"].([]any), map[string]any{"name": "datasets", "mountPath": "/data", "mountPropagation": "HostToContainer"})

	m := Read(live, nil)
	if m.PodTemplate.IsNull() {
		t.Fatal("the fields the typed attributes cannot carry are lost")
	}
	overlay, err := Decode[podTemplate](m.PodTemplate.ValueString())
	if err != nil {
		t.Fatalf("the generated overlay does not decode: %v\n%s", err, m.PodTemplate.ValueString())
	}
	want := map[string]any{"spec": map[string]any{
		"hostIPC": true,
		"containers": []any{map[string]any{"name": "ray-worker",
			"lifecycle":    worker["lifecycle"],
			"volumeMounts": []any{map[string]any{"mountPath": "/data", "mountPropagation": "HostToContainer"}}}},
		"volumes": []any{map[string]any{"name": "datasets", "nfs": map[string]any{"server": "nfs.example", "path": "/datasets"}}},
	}}
	if !equivalent(overlay, want) {
		t.Fatalf("overlay:\n%s", m.PodTemplate.ValueString())
	}
	if diags := Validate(m, path.Root("t")); diags.HasError() {
		t.Fatalf("the imported model does not validate: %v", diags)
	}
	obj := m.Object()
	if missing := subset(obj, live, ""); len(missing) > 0 {
		t.Errorf("writing the import back would change %v", missing)
	}
	if left := Remainder(live, &Template{PodTemplate: m.PodTemplate}); left == nil {
		t.Error("Remainder against the overlay alone should leave the typed fields")
	}
	if r := remainder(live, obj, "", nil); !empty(r) {
		t.Errorf("the written template misses %v", r)
	}
	if again := Read(live, m); again.PodTemplate != m.PodTemplate {
		t.Errorf("a refresh reads another overlay: %q", again.PodTemplate.ValueString())
	}
}

func TestProjectVanishedElement(t *testing.T) {
	overlay := map[string]any{"spec": map[string]any{"hostIPC": true, "containers": []any{map[string]any{"name": "proxy", "image": "envoy"}}}}
	live := map[string]any{"spec": map[string]any{"hostIPC": true, "containers": []any{map[string]any{"name": "main", "image": "x"}}}}
	got := project(overlay, live, "")
	if !equivalent(got, map[string]any{"spec": map[string]any{"hostIPC": true}}) {
		t.Fatalf("projection: %v", got)
	}
}

// Values unknown until apply are not judged (and do not panic).
func TestValidateUnknown(t *testing.T) {
	tmpl := &Template{
		Containers: []Container{{Name: types.StringUnknown(), Image: types.StringUnknown(),
			Requests:     types.MapUnknown(types.StringType),
			Limits:       types.MapValueMust(types.StringType, map[string]attr.Value{"nvidia.com/gpu": types.StringUnknown()}),
			VolumeMounts: []VolumeMount{{Name: types.StringUnknown(), MountPath: types.StringUnknown()}},
			Ports:        []Port{{ContainerPort: types.Int64Unknown()}},
		}},
		Volumes:     []Volume{{Name: types.StringUnknown()}},
		PodTemplate: types.StringUnknown(),
		Affinity:    types.StringUnknown(),
	}
	if diags := Validate(tmpl, path.Root("t")); diags.HasError() {
		t.Fatalf("unknown values judged: %v", diags)
	}
	_ = tmpl.Request("nvidia.com/gpu")
}
