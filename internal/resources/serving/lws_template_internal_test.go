package serving

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
)

// lwsSample is LWS's published leaderworkerset_v1_leaderworkerset.yaml
// sample as the API server returns it: with the CRD's and the webhook's
// defaults (networkConfig, the rollout's maxSurge and partition, the
// ports' protocol, the startup policy).
const lwsSample = `
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: leaderworkerset-sample
  namespace: default
  labels:
    app.kubernetes.io/name: leaderworkerset
    app.kubernetes.io/instance: leaderworkerset-sample
spec:
  replicas: 3
  startupPolicy: LeaderCreated
  networkConfig: {subdomainPolicy: Shared}
  rolloutStrategy:
    type: RollingUpdate
    rollingUpdateConfiguration: {maxUnavailable: 1, maxSurge: 0, partition: 0}
  leaderWorkerTemplate:
    size: 4
    restartPolicy: RecreateGroupOnPodRestart
    workerTemplate:
      metadata: {}
      spec:
        containers:
        - name: nginx
          image: nginxinc/nginx-unprivileged:1.27
          resources:
            limits: {cpu: 100m}
            requests: {cpu: 50m}
          ports:
          - containerPort: 8080
            protocol: TCP
`

// lwsRich is an object written after LWS's samples with what production
// groups carry: volumes (emptyDir, a Secret, a ConfigMap), env from a
// Secret, a regular sidecar and a native one, requests ≠ limits, a
// lifecycle hook (no typed attribute: pod_template), and a leader of its
// own.
const lwsRich = `
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: rich, namespace: default}
spec:
  replicas: 1
  startupPolicy: LeaderReady
  networkConfig: {subdomainPolicy: Shared}
  rolloutStrategy:
    type: RollingUpdate
    rollingUpdateConfiguration: {maxUnavailable: 1, maxSurge: 0, partition: 0}
  leaderWorkerTemplate:
    size: 2
    restartPolicy: RecreateGroupOnPodRestart
    subGroupPolicy: {subGroupPolicyType: LeaderWorker, subGroupSize: 2}
    leaderTemplate:
      metadata: {labels: {role: leader}}
      spec:
        containers:
        - name: vllm-leader
          image: vllm/vllm-openai:v0.9.0
          env:
          - {name: HF_TOKEN, valueFrom: {secretKeyRef: {name: hf-token, key: token}}}
          ports: [{containerPort: 8080, name: http, protocol: TCP}]
          resources:
            requests: {cpu: "4", memory: 16Gi, nvidia.com/gpu: "1"}
            limits: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "1"}
          volumeMounts:
          - {name: dshm, mountPath: /dev/shm}
          - {name: tls, mountPath: /etc/tls, readOnly: true}
          lifecycle:
            preStop: {exec: {command: [sleep, "5"]}}
        - name: metrics
          image: busybox:1.36
          args: [sleep, infinity]
        volumes:
        - {name: dshm, emptyDir: {medium: Memory, sizeLimit: 1Gi}}
        - {name: tls, secret: {secretName: serving-tls, defaultMode: 420}}
    workerTemplate:
      spec:
        initContainers:
        - {name: log-shipper, image: busybox:1.36, restartPolicy: Always, args: [sh, -c, "tail -F /logs/x"],
           volumeMounts: [{name: logs, mountPath: /logs}]}
        containers:
        - name: vllm-worker
          image: vllm/vllm-openai:v0.9.0
          command: [ray, start, --block]
          resources:
            requests: {cpu: 500m, nvidia.com/gpu: "1"}
            limits: {cpu: "1", nvidia.com/gpu: "1"}
          volumeMounts: [{name: logs, mountPath: /logs}, {name: config, mountPath: /etc/vllm}]
        volumes:
        - {name: logs, emptyDir: {}}
        - {name: config, configMap: {name: vllm-config}}
`

func liveObject(t *testing.T, text string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// within reports the paths where want sets a value live does not have;
// named list elements are matched by name.
func within(want, live any, at string) []string {
	switch w := want.(type) {
	case map[string]any:
		l, _ := live.(map[string]any)
		var out []string
		for k, v := range w {
			out = append(out, within(v, l[k], at+"."+k)...)
		}
		return out
	case []any:
		l, _ := live.([]any)
		var out []string
		for i, el := range w {
			var match any
			if m, _ := el.(map[string]any); m["name"] != nil {
				name := m["name"]
				for _, e := range l {
					if e.(map[string]any)["name"] == name {
						match = e
					}
				}
			} else if i < len(l) {
				match = l[i]
			}
			out = append(out, within(el, match, at+"[]")...)
		}
		return out
	}
	if !subset(want, live) {
		return []string{at}
	}
	return nil
}

// adopt imports live, checks that writing the model back changes nothing
// and a refresh reads the same model, and returns the model.
func adopt(t *testing.T, live map[string]any) *lwsGroupModel {
	t.Helper()
	m := &lwsGroupModel{}
	m.SetObjectRef(kube.Ref{Namespace: "default", Name: object.Field(live, "metadata", "name").(string)})
	readLWS(live, m)
	written := kube.NewObject(lwsKind, m.ObjectRef(), lwsFields(m)).Object
	if diff := within(written, live, ""); len(diff) > 0 {
		t.Errorf("writing the imported model back would change %v", diff)
	}
	again := *m
	readLWS(live, &again)
	if !reflect.DeepEqual(&again, m) {
		t.Errorf("a refresh reads another model:\n%+v\n%+v", again.Worker, m.Worker)
	}
	if diags := validateLWS(m); diags.HasError() {
		t.Errorf("the imported model does not validate: %v", diags)
	}
	return m
}

// The published sample imports into the shared model with the container's
// own name, its ports and its request apart from its limit, nothing in
// pod_template, and only the object's labels named as beyond the
// configuration. Scaling writes nothing but the replicas.
func TestLWSImportPublishedSample(t *testing.T) {
	live := liveObject(t, lwsSample)
	m := adopt(t, live)
	w := m.Worker
	if m.Leader != nil || w == nil || w.shorthand() || len(w.Containers) != 1 {
		t.Fatalf("leader %+v, worker %+v", m.Leader, w)
	}
	c := w.Containers[0]
	if c.Name.ValueString() != "nginx" || mapValue(c.Requests, "cpu") != "50m" || mapValue(c.Limits, "cpu") != "100m" ||
		len(c.Ports) != 1 || c.Ports[0].ContainerPort.ValueInt64() != 8080 || !c.Ports[0].Protocol.IsNull() {
		t.Errorf("container %+v", c)
	}
	if !w.PodTemplate.IsNull() || m.Replicas.ValueInt64() != 3 || m.Size.ValueInt64() != 4 {
		t.Errorf("pod_template %v, replicas %v, size %v", w.PodTemplate, m.Replicas, m.Size)
	}
	carried, lost := importReport(live, m)
	wantLost := []string{`metadata.labels["app.kubernetes.io/instance"]`, `metadata.labels["app.kubernetes.io/name"]`}
	if len(carried) != 0 || !reflect.DeepEqual(lost, wantLost) {
		t.Errorf("import report: carried %q, lost %q (want %q)", carried, lost, wantLost)
	}

	scaled := *m
	scaled.Replicas = types.Int64Value(4)
	before := kube.NewObject(lwsKind, m.ObjectRef(), lwsFields(m)).Object
	after := kube.NewObject(lwsKind, m.ObjectRef(), lwsFields(&scaled)).Object
	if changed := kube.ChangedPaths(before, after); !reflect.DeepEqual(changed, []string{"spec.replicas"}) {
		t.Errorf("scaling writes %v", changed)
	}
	if names := object.Items(after, "spec", "leaderWorkerTemplate", "workerTemplate", "spec", "containers"); len(names) != 1 || names[0]["name"] != "nginx" {
		t.Errorf("the scaled group's containers: %v", names)
	}
}

// A production-shaped object imports with every container, volume and
// mount under its own name; the lifecycle hook goes to pod_template and the
// subgroup policy is named as beyond the configuration.
func TestLWSImportRich(t *testing.T) {
	live := liveObject(t, lwsRich)
	m := adopt(t, live)
	l, w := m.Leader, m.Worker
	if l == nil || len(l.Containers) != 2 || l.Containers[0].Name.ValueString() != "vllm-leader" || l.Containers[1].Name.ValueString() != "metrics" {
		t.Fatalf("leader %+v", l)
	}
	if e := l.Containers[0].Env; len(e) != 1 || e[0].ValueFrom == nil || e[0].ValueFrom.SecretKeyRef.Name.ValueString() != "hf-token" {
		t.Errorf("leader env %+v", e)
	}
	if len(l.Volumes) != 2 || l.Volumes[0].EmptyDir.Medium.ValueString() != "Memory" || l.Volumes[1].Secret.SecretName.ValueString() != "serving-tls" ||
		!l.Volumes[1].Secret.DefaultMode.IsNull() {
		t.Errorf("leader volumes %+v", l.Volumes)
	}
	if len(w.InitContainers) != 1 || w.InitContainers[0].RestartPolicy.ValueString() != "Always" || len(w.Containers[0].VolumeMounts) != 2 {
		t.Errorf("worker %+v", w)
	}
	if m.groupGPUsOrZero() != 2 {
		t.Errorf("group GPUs %d, want 2", m.groupGPUsOrZero())
	}
	carried, lost := importReport(live, m)
	if want := []string{"spec.leaderWorkerTemplate.leaderTemplate.spec.containers[name=vllm-leader].lifecycle.preStop.exec.command"}; !reflect.DeepEqual(carried, want) {
		t.Errorf("carried %q, want %q", carried, want)
	}
	if want := []string{"spec.leaderWorkerTemplate.subGroupPolicy.subGroupPolicyType", "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize"}; !reflect.DeepEqual(lost, want) {
		t.Errorf("lost %q, want %q", lost, want)
	}
}

func (m *lwsGroupModel) groupGPUsOrZero() int64 {
	g, _ := m.groupGPUs()
	return g
}

// The shared model with the group's own additions: the cache is mounted
// into the model server (the first container) only, the startup probe is
// the leader server's, and neither is read back into a container.
func TestLWSContainersWithCacheAndServing(t *testing.T) {
	m := group()
	server := func(name string) podtemplate.Container {
		return podtemplate.Container{Name: types.StringValue(name), Image: types.StringValue("vllm/vllm-openai:v0.9.0"),
			Requests: strMap("cpu", "4", "nvidia.com/gpu", "4"), Limits: strMap("cpu", "8", "nvidia.com/gpu", "4")}
	}
	for _, tmpl := range []*podTemplateModel{m.Leader, m.Worker} {
		*tmpl = *nullShorthand()
		tmpl.Template = podTemplate(func(t *podtemplate.Template) {
			t.Containers = []podtemplate.Container{server("vllm"), {Name: types.StringValue("metrics"), Image: types.StringValue("busybox:1.36"),
				Requests: strMap(), Limits: strMap()}}
			t.Containers[1].Requests, t.Containers[1].Limits = types.MapNull(types.StringType), types.MapNull(types.StringType)
			t.Volumes = []podtemplate.Volume{{Name: types.StringValue("scratch"), EmptyDir: &podtemplate.EmptyDir{Medium: types.StringNull(), SizeLimit: types.StringNull()}}}
		})
	}
	if diags := validateLWS(m); diags.HasError() {
		t.Fatalf("validate: %v", diags)
	}
	want := group()
	*want.Leader, *want.Worker = *m.Leader, *m.Worker
	derive(want)
	got := *m
	live := roundTrip(t, m, &got, nil)
	if !reflect.DeepEqual(got.Leader, want.Leader) || !reflect.DeepEqual(got.Worker, want.Worker) || got.GPUsTotal.ValueInt64() != 16 {
		t.Errorf("read back\n%+v\nwant\n%+v", got.Leader, want.Leader)
	}
	tmpl := object.Fields(live, "spec", "leaderWorkerTemplate")
	leader := object.Items(tmpl, "leaderTemplate", "spec", "containers")
	if len(leader) != 2 || leader[0]["startupProbe"] == nil || leader[1]["startupProbe"] != nil || leader[1]["volumeMounts"] != nil ||
		len(object.Items(leader[0], "volumeMounts")) != 1 {
		t.Errorf("leader containers %v", leader)
	}
	if vols := object.Items(tmpl, "workerTemplate", "spec", "volumes"); len(vols) != 2 {
		t.Errorf("worker volumes %v", vols)
	}
	// Imported, the same object reads into the same worker template. The
	// leader's is the worker's plus the serving probes, which is what a
	// configuration without a leader block writes: the import has none,
	// and writes the same object.
	imported := &lwsGroupModel{}
	imported.SetObjectRef(m.ObjectRef())
	readLWS(live, imported)
	if imported.Leader != nil || !reflect.DeepEqual(imported.Worker, want.Worker) || imported.ModelCache == nil || imported.Serving == nil {
		t.Errorf("imported leader %+v, worker\n%+v\nwant\n%+v", imported.Leader, imported.Worker, want.Worker)
	}
	imported.Replicas, imported.Size = m.Replicas, m.Size
	if a, b := lwsFields(imported), lwsFields(m); !reflect.DeepEqual(a, b) {
		t.Errorf("the import writes\n%v\nthe configuration\n%v", a, b)
	}
}

func TestLWSTemplateValidate(t *testing.T) {
	full := func(m *lwsGroupModel) {
		*m.Worker = *nullShorthand()
		m.Worker.Template = podTemplate(func(t *podtemplate.Template) {
			t.Containers = []podtemplate.Container{{Name: types.StringValue("vllm"), Image: types.StringValue("vllm/vllm-openai:v0.9.0"),
				Requests: strMap("nvidia.com/gpu", "4"), Limits: strMap("nvidia.com/gpu", "4")}}
		})
	}
	for _, tc := range []struct {
		name string
		edit func(m *lwsGroupModel)
		want string
	}{
		{"containers", full, ""},
		{"both forms", func(m *lwsGroupModel) {
			c := m.Worker.Image
			full(m)
			m.Worker.Image = c
		}, "worker.containers: set image (the shorthand for a pod of one container) or containers, not both"},
		{"neither", func(m *lwsGroupModel) { full(m); m.Worker.Containers = nil }, "worker.containers: set containers, or image"},
		{"shorthand attribute with containers", func(m *lwsGroupModel) { full(m); m.Worker.GPUs = types.Int64Value(4) },
			"worker.gpus: belongs to the shorthand"},
		{"probe the group sets", func(m *lwsGroupModel) {
			full(m)
			m.Leader = nil
			m.Worker.Containers[0].StartupProbe = &podtemplate.Probe{TCPSocket: &podtemplate.TCPSocket{Port: types.StringValue("8000")}}
		}, "worker.containers[0].startup_probe: serving sets"},
		{"cache volume", func(m *lwsGroupModel) {
			full(m)
			m.Worker.Volumes = []podtemplate.Volume{{Name: types.StringValue("model-cache"), EmptyDir: &podtemplate.EmptyDir{}}}
		}, `worker.volumes[0].name: "model-cache" is the model_cache's volume`},
		{"mount of an unknown volume", func(m *lwsGroupModel) {
			full(m)
			m.Worker.Containers[0].VolumeMounts = []podtemplate.VolumeMount{{Name: types.StringValue("nope"), MountPath: types.StringValue("/x")}}
		}, `no volume named "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := group()
			tc.edit(m)
			var got []string
			diags := validateLWS(m)
			for _, d := range diags {
				got = append(got, d.Detail())
			}
			switch {
			case tc.want == "" && diags.HasError():
				t.Errorf("unexpected errors: %v", got)
			case tc.want != "" && !strings.Contains(strings.Join(got, "\n"), tc.want):
				t.Errorf("errors %q, want one containing %q", got, tc.want)
			}
		})
	}
}

func mapValue(m types.Map, k string) string {
	v, ok := m.Elements()[k].(types.String)
	if !ok {
		return "(none)"
	}
	return v.ValueString()
}
