package serving

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
)

// rayCompleteLive is a RayCluster as the API server returns it, shaped like
// KubeRay's ray-cluster.complete.yaml sample (written here, not copied) with
// what production clusters add: requests ≠ limits, the ray-logs volume and
// mounts, ports, env from a Secret, a log sidecar on the workers, an empty
// labels map, and the CRD's defaults (numOfHosts, no serviceType on workers).
const rayCompleteLive = `
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: complete, namespace: default, generation: 1, resourceVersion: "7"}
spec:
  rayVersion: "2.46.0"
  headGroupSpec:
    serviceType: ClusterIP
    rayStartParams: {dashboard-host: "0.0.0.0"}
    template:
      metadata: {labels: {}}
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.46.0
          ports:
          - {containerPort: 6379, name: gcs}
          - {containerPort: 8265, name: dashboard}
          - {containerPort: 10001, name: client}
          volumeMounts:
          - {mountPath: /tmp/ray, name: ray-logs}
          resources:
            limits: {cpu: "1", memory: 2G}
            requests: {cpu: 500m, memory: 2G}
        volumes:
        - {name: ray-logs, emptyDir: {}}
  workerGroupSpecs:
  - groupName: small-group
    replicas: 1
    minReplicas: 1
    maxReplicas: 10
    numOfHosts: 1
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.46.0
          env:
          - name: HF_TOKEN
            valueFrom: {secretKeyRef: {name: hf-token, key: token}}
          volumeMounts:
          - {mountPath: /tmp/ray, name: ray-logs}
          resources:
            limits: {cpu: "1", memory: 1G}
            requests: {cpu: 500m, memory: 1G}
        - name: log-shipper
          image: busybox:1.36
          args: [sh, -c, "tail -F /tmp/ray/session_latest/logs/raylet.out"]
          volumeMounts:
          - {mountPath: /tmp/ray, name: ray-logs, readOnly: true}
        volumes:
        - {name: ray-logs, emptyDir: {}}
status: {state: ready, readyWorkerReplicas: 1}
`

// rayDecode decodes a live object as the dynamic client does: integers as int64.
func rayDecode(t *testing.T, doc string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	var fix func(v any) any
	fix = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = fix(e)
			}
		case []any:
			for i, e := range x {
				x[i] = fix(e)
			}
		case float64:
			if x == float64(int64(x)) {
				return int64(x)
			}
		}
		return v
	}
	return fix(m).(map[string]any)
}

// rayImport reads live into an empty model, as terraform import does.
func rayImport(live map[string]any) rayClusterModel {
	var m rayClusterModel
	m.SetObjectRef(kube.Ref{Namespace: "default", Name: object.Field(live, "metadata", "name").(string)})
	readRayCluster(live, &m)
	return m
}

// rayAppliedSpec is the spec an apply of m would send to the live object.
func rayAppliedSpec(m *rayClusterModel, live map[string]any) map[string]any {
	fields := rayClusterFields(m)
	rayKeepLive(fields, live)
	keepAutoscalerReplicas(m, fields, live)
	return fields
}

// Import of the complete sample: the typed attributes carry what they can
// (memory = requests = limits), the templates the rest (requests ≠ limits,
// ports, volumes, env from a Secret, the sidecar) under the live names; an
// apply of the imported model would send the live spec back unchanged; a
// refresh reads the same model; the model validates.
func TestRayClusterImportComplete(t *testing.T) {
	live := rayDecode(t, rayCompleteLive)
	m := rayImport(live)

	h, w := m.Head, m.WorkerGroups[0]
	checks := map[string]bool{
		"default container names stay unset":   h.ContainerName.IsNull() && w.ContainerName.IsNull(),
		"memory typed (request = limit)":       h.Memory.ValueString() == "2G" && w.Memory.ValueString() == "1G",
		"cpu not typed (request ≠ limit)":      h.CPU.IsNull() && w.CPU.IsNull(),
		"default image not written":            m.Image.IsNull(),
		"service type read":                    h.ServiceType.ValueString() == "ClusterIP",
		"head template: Ray container only":    h.Template != nil && len(h.Template.Containers) == 1 && h.Template.Containers[0].Name.ValueString() == "ray-head",
		"Ray container without its own image":  h.Template != nil && h.Template.Containers[0].Image.IsNull(),
		"head request and limit apart":         h.Template != nil && rayMapValue(h.Template.Containers[0].Requests, "cpu") == "500m" && rayMapValue(h.Template.Containers[0].Limits, "cpu") == "1",
		"memory only in the typed attribute":   h.Template != nil && rayMapValue(h.Template.Containers[0].Requests, "memory") == "",
		"head ports":                           h.Template != nil && len(h.Template.Containers[0].Ports) == 3,
		"head volume":                          h.Template != nil && len(h.Template.Volumes) == 1 && h.Template.Volumes[0].EmptyDir != nil,
		"the empty labels map in the overlay":  h.Template != nil && strings.Contains(h.Template.PodTemplate.ValueString(), "labels: {}"),
		"worker sidecar with its image":        w.Template != nil && len(w.Template.Containers) == 2 && w.Template.Containers[1].Image.ValueString() == "busybox:1.36",
		"env from a Secret":                    w.Template != nil && w.Template.Containers[0].Env[0].ValueFrom.SecretKeyRef.Name.ValueString() == "hf-token",
		"worker overlay empty":                 w.Template != nil && w.Template.PodTemplate.IsNull(),
		"numOfHosts default is no attribute":   w.MaxReplicas.ValueInt64() == 10,
		"no model cache, no queue, no suspend": m.ModelCache == nil && m.QueueName.IsNull() && m.Suspend.IsNull(),
	}
	for what, ok := range checks {
		if !ok {
			t.Errorf("%s: not as expected", what)
		}
	}
	if diags := validateRayCluster(&m); diags.HasError() {
		t.Errorf("the imported model does not validate: %v", diags)
	}
	if paths := rayUnexpressed(live, &m); len(paths) > 0 {
		t.Errorf("an apply of the imported model would change %v", paths)
	}
	again := m
	again.Head = &rayHead{}
	*again.Head = *m.Head
	again.WorkerGroups = append([]rayWorkerGroup(nil), m.WorkerGroups...)
	readRayCluster(live, &again)
	if !reflect.DeepEqual(again, m) {
		t.Errorf("a refresh reads another model:\n%+v\n%+v", again.Head.Template, m.Head.Template)
	}

	// Scaling: only replicas changes.
	scaled := m
	scaled.WorkerGroups = append([]rayWorkerGroup(nil), m.WorkerGroups...)
	scaled.WorkerGroups[0].Replicas = types.Int64Value(2)
	got := kube.ChangedPaths(map[string]any{"spec": object.Fields(live, "spec")}, map[string]any{"spec": object.Fields(rayAppliedSpec(&scaled, live), "spec")})
	want := []string{`spec.workerGroupSpecs["groupName=small-group"].numOfHosts`, `spec.workerGroupSpecs["groupName=small-group"].replicas`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("scaling changes %v, want %v (numOfHosts only because the server's default is not sent)", got, want)
	}
}

func rayMapValue(m types.Map, k string) string {
	v, ok := m.Elements()[k].(types.String)
	if !ok {
		return ""
	}
	return v.ValueString()
}

// KubeRay's ray-cluster.sample.yaml writes quantities as numbers (cpu: 1)
// and leaves serviceType and rayStartParams of the head out: the import
// reads cpu = "1", and an apply keeps the live spellings and leaves out what
// the live object leaves out.
func TestRayClusterImportKeepsSampleSpellings(t *testing.T) {
	live := rayDecode(t, `
metadata: {name: sample, namespace: default}
spec:
  rayVersion: "2.46.0"
  headGroupSpec:
    template:
      spec:
        containers:
        - name: head
          image: rayproject/ray:2.46.0
          resources: {limits: {cpu: 1, memory: 2G}, requests: {cpu: 1, memory: 2G}}
  workerGroupSpecs:
  - {groupName: workergroup, replicas: 1, minReplicas: 1, maxReplicas: 5, numOfHosts: 1, rayStartParams: {},
     template: {spec: {containers: [{name: ray-worker, image: rayproject/ray:2.46.0,
       resources: {limits: {cpu: 1, memory: 1G, nvidia.com/gpu: 1}, requests: {cpu: 1, memory: 1G}}}]}}}
`)
	m := rayImport(live)
	if m.Head.CPU.ValueString() != "1" || m.Head.Template != nil || m.Head.ContainerName.ValueString() != "head" {
		t.Errorf("head: cpu %v, template %+v, container %v", m.Head.CPU, m.Head.Template, m.Head.ContainerName)
	}
	w := m.WorkerGroups[0]
	if !w.GPUs.IsNull() || w.Template == nil || rayMapValue(w.Template.Containers[0].Limits, "nvidia.com/gpu") != "1" {
		t.Errorf("a GPU limit without a request is the template's: gpus %v, template %+v", w.GPUs, w.Template)
	}
	if rayGroupGPUs(&w) != 1 {
		t.Errorf("the plan's GPU check sees %d GPUs per worker, want 1", rayGroupGPUs(&w))
	}
	if paths := rayUnexpressed(live, &m); len(paths) > 0 {
		t.Errorf("an apply of the imported model would change %v", paths)
	}
	spec := rayAppliedSpec(&m, live)
	head := object.Fields(spec, "spec", "headGroupSpec")
	if _, ok := head["serviceType"]; ok {
		t.Errorf("serviceType written where the live object has none: %v", head)
	}
	if c := object.Items(head, "template", "spec", "containers"); len(c) != 1 || c[0]["name"] != "head" ||
		object.Field(c[0], "resources", "limits", "cpu") != int64(1) {
		t.Errorf("head containers %v: want the live name and spelling", c)
	}
}

// A cluster created from typed attributes only reads back without a
// template (so import verification and plans stay as before), and what
// Kueue injects on admission into a template's node selector and
// tolerations is not a diff.
func TestRayClusterTemplateRefreshIgnoresKueue(t *testing.T) {
	src := sampleRayCluster()
	got := rayImport(rayLive(t, &src, nil))
	if got.Head.Template != nil || got.WorkerGroups[0].Template != nil {
		t.Errorf("typed-only cluster imports with templates: %+v %+v", got.Head.Template, got.WorkerGroups[0].Template)
	}

	m := sampleRayCluster()
	null := types.MapNull(types.StringType) // as the configuration decodes
	m.Head.Template = &podtemplate.Template{
		Volumes:      []podtemplate.Volume{{Name: types.StringValue("logs"), EmptyDir: &podtemplate.EmptyDir{}}},
		NodeSelector: rayStrMap("cpu-pool", "a"), Labels: null, Annotations: null,
		Containers: []podtemplate.Container{{Name: types.StringValue("ray-head"), Requests: null, Limits: null,
			VolumeMounts: []podtemplate.VolumeMount{{Name: types.StringValue("logs"), MountPath: types.StringValue("/tmp/ray")}}}},
	}
	if diags := validateRayCluster(&m); diags.HasError() {
		t.Fatal(diags)
	}
	wantHead := *m.Head
	readRayCluster(rayLive(t, &m, nil), &m)
	if !reflect.DeepEqual(*m.Head, wantHead) {
		t.Errorf("head read back:\n%+v\nwant\n%+v", m.Head.Template, wantHead.Template)
	}
	live := rayLive(t, &m, func(obj map[string]any) {
		spec := object.Fields(obj, "spec", "headGroupSpec", "template", "spec")
		spec["nodeSelector"].(map[string]any)["kueue-flavor"] = "x"
		spec["tolerations"] = []any{map[string]any{"key": "flavor", "operator": "Exists"}}
	})
	readRayCluster(live, &m)
	if !reflect.DeepEqual(*m.Head, wantHead) {
		t.Errorf("head read back after Kueue's admission:\n%+v\nwant\n%+v", m.Head.Template, wantHead.Template)
	}
}

// Each field in one place; the Ray container first; sidecars with images.
func TestRayClusterTemplateValidation(t *testing.T) {
	m := sampleRayCluster()
	m.WorkerGroups[0].Template = &podtemplate.Template{
		Containers: []podtemplate.Container{
			{Name: types.StringValue("sidecar")},
			{Name: types.StringValue("ray-worker"), Requests: rayStrMap("cpu", "500m")},
		},
		NodeSelector: rayStrMap("a", "b"),
		Labels:       rayStrMap(rayQueueLabel, "x"),
	}
	diags := object.WithPaths(validateRayCluster(&m))
	var text []string
	for _, d := range diags {
		text = append(text, d.Detail())
	}
	all := strings.Join(text, "\n")
	for _, want := range []string{
		`worker_groups[0].template.containers[0].image: container "sidecar" needs an image`,
		`worker_groups[0].template.containers[1]: "ray-worker" is the Ray container (container_name) and must be the first`,
		`worker_groups[0].template.containers[1].requests["cpu"] sets what worker_groups[0].cpu sets too`,
		`worker_groups[0].template.node_selector sets what worker_groups[0].node_selector sets too`,
		`worker_groups[0].template.labels["kueue.x-k8s.io/queue-name"] sets what queue_name sets too`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("missing %q in:\n%s", want, all)
		}
	}
}

// The Ray container is changed by its name: a group whose container is
// named differently gets its typed fields on that container, never a
// second one beside it.
func TestRayClusterContainerNamed(t *testing.T) {
	m := sampleRayCluster()
	m.WorkerGroups[0].ContainerName = types.StringValue("worker")
	m.WorkerGroups[0].Template = &podtemplate.Template{Containers: []podtemplate.Container{
		{Name: types.StringValue("worker"), Ports: []podtemplate.Port{{ContainerPort: types.Int64Value(8080)}}},
		{Name: types.StringValue("proxy"), Image: types.StringValue("envoyproxy/envoy:v1.30")},
	}}
	cs := object.Items(rayClusterFields(&m), "spec", "workerGroupSpecs")[0]
	containers := object.Items(cs, "template", "spec", "containers")
	if len(containers) != 2 || containers[0]["name"] != "worker" || containers[0]["image"] != "rayproject/ray:2.46.0" ||
		object.Field(containers[0], "resources", "limits", "nvidia.com/gpu") != "4" || len(object.List(containers[0], "volumeMounts")) != 1 {
		t.Errorf("containers: %v", containers)
	}
}

// The model and the resource's schema agree: an imported cluster goes
// through Terraform's state encoding and comes back the same.
func TestRayClusterSchemaMatchesModel(t *testing.T) {
	ctx := context.Background()
	var resp resource.SchemaResponse
	NewRayCluster().Schema(ctx, resource.SchemaRequest{}, &resp)
	if diags := resp.Schema.ValidateImplementation(ctx); diags.HasError() {
		t.Fatalf("schema: %v", diags)
	}
	in := rayImport(rayDecode(t, rayCompleteLive))
	in.AcceptLiveChanges = types.ListNull(types.StringType)
	in.Timeouts = object.NullTimeouts(true)
	state := tfsdk.State{Schema: resp.Schema, Raw: tftypes.NewValue(resp.Schema.Type().TerraformType(ctx), nil)}
	if diags := state.Set(ctx, &in); diags.HasError() {
		t.Fatalf("set: %v", diags)
	}
	var out rayClusterModel
	if diags := state.Get(ctx, &out); diags.HasError() {
		t.Fatalf("get: %v", diags)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip through state differs:\n%+v\n%+v", in.Head, out.Head)
	}
}

// Out-of-band changes to what a template says show as drift: a volume
// removed from an imported cluster's workers, a sidecar added to its head.
func TestRayClusterTemplateDrift(t *testing.T) {
	live := rayDecode(t, rayCompleteLive)
	m := rayImport(live)
	object.Fields(object.Items(live, "spec", "workerGroupSpecs")[0], "template", "spec")["volumes"] = []any{}
	head := object.Fields(live, "spec", "headGroupSpec", "template", "spec")
	head["containers"] = append(head["containers"].([]any), map[string]any{"name": "debug", "image": "busybox:1.36"})
	readRayCluster(live, &m)
	if n := len(m.WorkerGroups[0].Template.Volumes); n != 0 {
		t.Errorf("the removed volume still reads: %d volumes", n)
	}
	if cs := m.Head.Template.Containers; len(cs) != 2 || cs[1].Name.ValueString() != "debug" {
		t.Errorf("the added sidecar does not read: %+v", cs)
	}
}
