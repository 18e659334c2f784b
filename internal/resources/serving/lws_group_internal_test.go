package serving

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
)

func strs(v ...string) []types.String {
	out := make([]types.String, len(v))
	for i, s := range v {
		out[i] = types.StringValue(s)
	}
	return out
}

func strMap(kv ...string) types.Map {
	m := map[string]attr.Value{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = types.StringValue(kv[i+1])
	}
	return types.MapValueMust(types.StringType, m)
}

// podTemplate is a template as state holds it (every attribute null),
// edited.
func podTemplate(edit func(t *podtemplate.Template)) podtemplate.Template {
	t := *podtemplate.Read(map[string]any{}, nil)
	edit(&t)
	return t
}

// group is a planned 70B bf16 group: 2 groups of a leader and a worker with
// 4 GPUs each on 80 GB cards, reading from a node-local cache.
func group() *lwsGroupModel {
	tmpl := func(args ...string) *podTemplateModel {
		return &podTemplateModel{
			Image: types.StringValue("vllm/vllm-openai:v0.9.0"), Command: strs("python3", "-m"), Args: strs(args...),
			Env: strMap("HF_HOME", "/models"), GPUs: types.Int64Value(4), CPU: types.StringValue("8"), Memory: types.StringValue("64Gi"),
			Template: podTemplate(func(t *podtemplate.Template) {
				t.NodeSelector = strMap("pool", "h100")
				t.Tolerations = []object.Toleration{{Key: types.StringValue("nvidia.com/gpu"), Operator: types.StringValue("Exists"),
					Value: types.StringNull(), Effect: types.StringValue("NoSchedule")}}
			}),
			ContainerName: types.StringNull(),
		}
	}
	m := &lwsGroupModel{
		Replicas: types.Int64Value(2), Size: types.Int64Value(2),
		Leader: tmpl("vllm.entrypoints.openai.api_server"), Worker: tmpl("ray", "start"),
		StartupPolicy: types.StringValue("LeaderCreated"), RestartPolicy: types.StringValue("RecreateGroupOnPodRestart"),
		Rollout:   &rolloutModel{MaxUnavailable: types.StringValue("25%"), MaxSurge: types.StringValue("1")},
		QueueName: types.StringValue("serving"), AllowScaleToZero: types.BoolValue(false), WaitForReady: types.BoolValue(true),
		ModelCache: &modelCacheModel{Mode: types.StringValue("node_local"), ClaimName: types.StringNull(),
			HostPath: types.StringValue("/var/lib/model-cache/default/llama"), SubPath: types.StringValue("main-0123abcd"), MountPath: types.StringValue("/models/llama")},
		Serving: &servingModel{ModelBytes: types.Int64Null(), ParamsBillion: types.Float64Value(70), DType: types.StringValue("bf16"),
			KVCacheBytesPerRequest: types.Int64Value(1 << 30), GPUMemory: types.StringValue("80G"), ReserveFraction: types.Float64Value(0.1),
			KVCacheBytesPerToken: types.Int64Null(), ContextLength: types.Int64Null(), AttentionHeads: types.Int64Null(), KVHeads: types.Int64Null(),
			OverheadBytesPerGPU: types.Int64Null(), TensorParallel: types.Int64Value(8), Port: types.Int64Value(8000),
			HealthPath: types.StringValue("/health"), ReadinessPath: types.StringValue("/v1/models")},
	}
	m.SetObjectRef(kube.Ref{Namespace: "default", Name: "llama"})
	return m
}

// roundTrip writes m as the API server would return it (through JSON) and reads it back.
func roundTrip(t *testing.T, m *lwsGroupModel, prior *lwsGroupModel, edit func(obj map[string]any)) map[string]any {
	t.Helper()
	obj := kube.NewObject(lwsKind, m.ObjectRef(), lwsFields(m)).Object
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var live map[string]any
	if err := json.Unmarshal(b, &live); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(live)
	}
	readLWS(live, prior)
	return live
}

func TestLWSFieldsRoundTrip(t *testing.T) {
	want := group()
	derive(want)
	got := group()
	got.GPUsTotal, got.MaxConcurrency = types.Int64Unknown(), types.Int64Unknown()
	live := roundTrip(t, group(), got, func(obj map[string]any) {
		// What the LWS webhook and controller add must not show as a diff.
		tmpl := object.Fields(obj, "spec", "leaderWorkerTemplate")
		c := mainContainer(object.Fields(tmpl, "workerTemplate"))
		c["env"] = append(c["env"].([]any), map[string]any{"name": "LWS_LEADER_ADDRESS", "value": "llama-0.llama"})
		object.Fields(obj, "spec", "rolloutStrategy", "rollingUpdateConfiguration")["partition"] = float64(0)
		object.Fields(obj, "spec")["networkConfig"] = map[string]any{"subdomainPolicy": "Shared"}
	})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, want)
	}
	// 2 groups × (4 + 4) GPUs; the fit rule with 1 GiB overhead per GPU:
	// ⌊(72 GB − 140 GB ÷ 8 − 2^30) × 8 ÷ 2^30⌋ = 398 per group.
	if got.GPUsTotal.ValueInt64() != 16 || got.MaxConcurrency.ValueInt64() != 2*398 {
		t.Errorf("gpus_total %v, max_concurrency %v", got.GPUsTotal, got.MaxConcurrency)
	}
	if v := object.Field(live, "metadata", "labels", QueueLabel); v != "serving" {
		t.Errorf("queue label %v", v)
	}
	tmpl := object.Fields(live, "spec", "leaderWorkerTemplate")
	leader, worker := mainContainer(object.Fields(tmpl, "leaderTemplate")), mainContainer(object.Fields(tmpl, "workerTemplate"))
	probe := object.Fields(leader, "startupProbe")
	// (140e9 B ÷ 1 GiB/s + 60 s) × 2 ÷ 10 s = 38.08 → 39 (node-local cache).
	if probe == nil || object.Field(probe, "failureThreshold") != float64(39) || object.Field(probe, "httpGet", "path") != "/health" {
		t.Errorf("leader startup probe %v", probe)
	}
	// Liveness on the server's own health, with no initial delay: Kubernetes
	// holds it until the startup probe has passed. Readiness apart.
	live10 := map[string]any{"httpGet": map[string]any{"path": "/health", "port": float64(8000)},
		"periodSeconds": float64(10), "timeoutSeconds": float64(5), "failureThreshold": float64(3)}
	if !reflect.DeepEqual(leader["livenessProbe"], live10) {
		t.Errorf("leader liveness probe %v, want %v", leader["livenessProbe"], live10)
	}
	if object.Field(leader, "readinessProbe", "httpGet", "path") != "/v1/models" || object.Field(leader, "readinessProbe", "periodSeconds") != float64(5) {
		t.Errorf("leader readiness probe %v", leader["readinessProbe"])
	}
	for _, f := range serverProbeFields {
		if worker[f] != nil {
			t.Errorf("worker has a %s: %v", f, worker[f])
		}
	}
	if v := object.Field(worker, "resources", "limits", "nvidia.com/gpu"); v != "4" {
		t.Errorf("worker GPUs %v", v)
	}
	vols := object.Items(tmpl, "workerTemplate", "spec", "volumes")
	if len(vols) != 1 || object.Field(vols[0], "hostPath", "path") != "/var/lib/model-cache/default/llama/main-0123abcd" {
		t.Errorf("volumes %v", vols)
	}
	if v := object.Field(live, "spec", "rolloutStrategy", "rollingUpdateConfiguration", "maxSurge"); v != float64(1) {
		t.Errorf("maxSurge written as %#v, want the number 1", v)
	}
}

// Import: nothing but the name is known; everything is read from the object.
func TestLWSImport(t *testing.T) {
	want := group()
	derive(want)
	got := &lwsGroupModel{}
	got.SetObjectRef(want.ObjectRef())
	roundTrip(t, group(), got, nil)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("imported\n%+v\nwant\n%+v", got, want)
	}
}

// A serving group without a leader block: the leader runs the worker
// template with the model server's probes, the workers run it without any
// (a Ray or vLLM worker serves no HTTP: probes on the server's port would
// kill it after the startup budget and, with RecreateGroupOnPodRestart,
// restart the whole group). The object reads back as no leader block.
func TestLWSWithoutLeader(t *testing.T) {
	m := group()
	m.Leader, m.ModelCache = nil, &modelCacheModel{Mode: types.StringValue("pvc"), ClaimName: types.StringValue("llama"), HostPath: types.StringNull(),
		SubPath: types.StringValue("main-0123abcd"), MountPath: types.StringValue("/models/llama")}
	if diags := validateLWS(m); diags.HasError() {
		t.Fatalf("validate: %v", diags)
	}
	got := group()
	got.Leader = nil
	live := roundTrip(t, m, got, nil)
	tmpl := object.Fields(live, "spec", "leaderWorkerTemplate")
	for _, c := range object.Items(tmpl, "workerTemplate", "spec", "containers") {
		for _, f := range serverProbeFields {
			if c[f] != nil {
				t.Errorf("worker container %v has a %s: %v", c["name"], f, c[f])
			}
		}
	}
	// The leader's server: the startup probe sized for a claim,
	// (140e9 ÷ 200 MiB/s + 60) × 2 ÷ 10 = 145.5 → 146, liveness after it,
	// readiness apart.
	leader := mainContainer(object.Fields(tmpl, "leaderTemplate"))
	if v := object.Field(leader, "startupProbe", "failureThreshold"); v != float64(146) {
		t.Errorf("leader startup failureThreshold %v", v)
	}
	if object.Field(leader, "livenessProbe", "httpGet", "path") != "/health" || object.Field(leader, "readinessProbe", "httpGet", "path") != "/v1/models" {
		t.Errorf("leader probes %v, %v", leader["livenessProbe"], leader["readinessProbe"])
	}
	// Apart from the probes the two templates are one.
	bare := runtime.DeepCopyJSONValue(object.Fields(tmpl, "leaderTemplate")).(map[string]any)
	for _, f := range serverProbeFields {
		delete(mainContainer(bare), f)
	}
	if !reflect.DeepEqual(bare, object.Fields(tmpl, "workerTemplate")) {
		t.Errorf("leader template without probes\n%v\nworker template\n%v", bare, object.Fields(tmpl, "workerTemplate"))
	}
	if got.Leader != nil || got.ModelCache == nil || *got.ModelCache != *m.ModelCache || !reflect.DeepEqual(got.Worker, m.Worker) {
		t.Errorf("leader %v, cache %+v, worker %+v", got.Leader, got.ModelCache, got.Worker)
	}
	// Imported: no leader block either.
	imported := &lwsGroupModel{}
	imported.SetObjectRef(m.ObjectRef())
	readLWS(live, imported)
	if imported.Leader != nil || imported.Worker == nil {
		t.Errorf("imported leader %+v, worker %+v", imported.Leader, imported.Worker)
	}

	// Without serving nothing is probed, and the leader runs the worker
	// template as LWS does by default: no leader template.
	m.Serving = nil
	live = roundTrip(t, m, &lwsGroupModel{}, nil)
	tmpl = object.Fields(live, "spec", "leaderWorkerTemplate")
	if tmpl["leaderTemplate"] != nil || mainContainer(object.Fields(tmpl, "workerTemplate"))["startupProbe"] != nil {
		t.Errorf("without serving: %v", tmpl)
	}
}

// A group written before the workers went without probes (no leader
// template, the probes on the worker template) reads as a leader block, so
// a configuration without one plans the update that fixes the workers.
func TestLWSWithoutLeaderLegacy(t *testing.T) {
	m := group()
	m.Leader = nil
	got := group()
	got.Leader = nil
	roundTrip(t, m, got, func(obj map[string]any) {
		tmpl := object.Fields(obj, "spec", "leaderWorkerTemplate")
		tmpl["workerTemplate"] = tmpl["leaderTemplate"]
		delete(tmpl, "leaderTemplate")
	})
	if got.Leader == nil || !reflect.DeepEqual(got.Worker, m.Worker) {
		t.Errorf("leader %+v, worker %+v: want a leader (a diff against the configuration) and the worker as configured", got.Leader, got.Worker)
	}
}

// The tensor-parallel rule without the heads: a power of two passes
// silently, anything else warns (the plan cannot check it, and vLLM refuses
// it for almost every model) on the attribute, or on serving for the
// default (every GPU of the group).
func TestLWSTensorParallelWithoutHeads(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(m *lwsGroupModel)
		path string // "" for no warning
	}{
		{"8", func(m *lwsGroupModel) {}, ""},
		{"6", func(m *lwsGroupModel) { m.Size, m.Serving.TensorParallel = types.Int64Value(3), types.Int64Value(6) }, "serving.tensor_parallel"},
		{"default 12", func(m *lwsGroupModel) { m.Size, m.Serving.TensorParallel = types.Int64Value(3), types.Int64Null() }, "serving"},
		{"6 with 48 heads", func(m *lwsGroupModel) {
			m.Size, m.Serving.TensorParallel, m.Serving.AttentionHeads = types.Int64Value(3), types.Int64Value(6), types.Int64Value(48)
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := group()
			tc.edit(m)
			diags := validateLWS(m)
			if diags.HasError() {
				t.Fatalf("errors: %v", diags)
			}
			var warned []string
			for _, d := range diags.Warnings() {
				if dp, ok := d.(diag.DiagnosticWithPath); ok && strings.Contains(d.Detail(), "is not a power of two and the model's attention heads are not given") {
					warned = append(warned, dp.Path().String())
				}
			}
			if tc.path == "" && len(warned) > 0 || tc.path != "" && (len(warned) != 1 || warned[0] != tc.path) {
				t.Errorf("warnings at %q, want at %q", warned, tc.path)
			}
		})
	}
}

func TestLWSValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(m *lwsGroupModel)
		want string // "" for no error
	}{
		{"fits", func(*lwsGroupModel) {}, ""},
		{"tensor parallel 1", func(m *lwsGroupModel) { m.Serving.TensorParallel = types.Int64Value(1) },
			"weights 140 GB ÷ tensor_parallel 1 = 140 GB + KV cache of one request 1.07 GB ÷ 1 = 1.07 GB + overhead 1.07 GB = 142.15 GB per GPU, " +
				"but a 80 GB GPU holds 72 GB after the 0.1 reserve; at least 2 GPUs"},
		// The weights fit 2 GPUs (70 GB + 1.07 GB overhead ≤ 72 GB), one
		// request's 3 GB of KV cache does not: a concurrency of 0.
		{"maximum concurrency 0", func(m *lwsGroupModel) {
			m.Serving.TensorParallel, m.Serving.KVCacheBytesPerRequest = types.Int64Value(2), types.Int64Value(3e9)
		}, "the weights fit, but its maximum concurrency would be 0): weights 140 GB ÷ tensor_parallel 2 = 70 GB + KV cache of one request 3 GB ÷ 2 = 1.5 GB + overhead 1.07 GB = 72.57 GB per GPU, but a 80 GB GPU holds 72 GB"},
		// Llama 3 70B: 2 × 80 layers × 8 KV heads × 128 × 2 bytes = 327680 B
		// per token; 8192 tokens = 2.68 GB.
		{"context length", func(m *lwsGroupModel) {
			m.Serving.TensorParallel, m.Serving.KVCacheBytesPerRequest = types.Int64Value(2), types.Int64Null()
			m.Serving.KVCacheBytesPerToken, m.Serving.ContextLength = types.Int64Value(327680), types.Int64Value(8192)
		}, "the KV cache of one request of 8192 tokens and the per-GPU overhead"},
		{"per token without context length", func(m *lwsGroupModel) {
			m.Serving.KVCacheBytesPerRequest, m.Serving.KVCacheBytesPerToken = types.Int64Null(), types.Int64Value(327680)
		}, "kv_cache_bytes_per_token needs context_length"},
		{"overhead fills the GPU", func(m *lwsGroupModel) { m.Serving.OverheadBytesPerGPU = types.Int64Value(60e9) }, "+ overhead 60 GB"},
		{"negative overhead", func(m *lwsGroupModel) { m.Serving.OverheadBytesPerGPU = types.Int64Value(-1) }, "must not be negative"},
		// vLLM accepts tensor parallel 6 when the heads allow it (48 and 6)…
		{"tensor parallel 6 with heads that allow it", func(m *lwsGroupModel) {
			m.Serving.TensorParallel, m.Serving.AttentionHeads, m.Serving.KVHeads = types.Int64Value(6), types.Int64Value(48), types.Int64Value(6)
		}, ""},
		{"tensor parallel 6 without heads", func(m *lwsGroupModel) { m.Serving.TensorParallel = types.Int64Value(6) }, ""},
		// … and refuses it for 64 heads.
		{"tensor parallel 6 with 64 heads", func(m *lwsGroupModel) {
			m.Serving.TensorParallel, m.Serving.AttentionHeads, m.Serving.KVHeads = types.Int64Value(6), types.Int64Value(64), types.Int64Value(8)
		}, "tensor_parallel 6 does not divide the model's 64 attention heads (vLLM and SGLang shard heads evenly); valid values: 1, 2, 4, 8, 16, 32, 64"},
		{"tensor parallel 6 with 8 KV heads", func(m *lwsGroupModel) {
			m.Serving.TensorParallel, m.Serving.AttentionHeads, m.Serving.KVHeads = types.Int64Value(6), types.Int64Value(48), types.Int64Value(8)
		}, "tensor_parallel 6 neither divides the model's 8 KV heads"},
		{"replicas 0", func(m *lwsGroupModel) { m.Replicas = types.Int64Value(0) }, "Set allow_scale_to_zero = true"},
		{"replicas 0 by default of the opt-in", func(m *lwsGroupModel) { m.Replicas, m.AllowScaleToZero = types.Int64Value(0), types.BoolNull() }, "Set allow_scale_to_zero = true"},
		{"replicas 0 allowed", func(m *lwsGroupModel) { m.Replicas, m.AllowScaleToZero = types.Int64Value(0), types.BoolValue(true) }, ""},
		{"downstream liveness path", func(m *lwsGroupModel) { m.Serving.HealthPath = types.StringValue("/health/dependencies") }, "is a readiness or dependency check"},
		{"liveness path with a query", func(m *lwsGroupModel) { m.Serving.HealthPath = types.StringValue("/health?deep=1") }, "has a query"},
		{"tensor parallel above the group", func(m *lwsGroupModel) { m.Serving.TensorParallel = types.Int64Value(16) },
			"tensor_parallel 16 exceeds the 8 GPUs of a group (size 2: leader 4 GPUs + 1 workers × 4 GPUs)"},
		{"default tensor parallel too small", func(m *lwsGroupModel) {
			m.Serving.TensorParallel, m.Size, m.Leader.GPUs = types.Int64Null(), types.Int64Value(1), types.Int64Value(1)
		}, "÷ tensor_parallel 1"},
		{"no GPUs", func(m *lwsGroupModel) {
			m.Leader.GPUs, m.Worker.GPUs, m.Serving.TensorParallel = types.Int64Null(), types.Int64Null(), types.Int64Null()
		}, "the group requests none"},
		{"both weights", func(m *lwsGroupModel) { m.Serving.ModelBytes = types.Int64Value(1) }, "not both"},
		{"dtype alone", func(m *lwsGroupModel) { m.Serving.ParamsBillion = types.Float64Null() }, "dtype needs params_billion"},
		{"reserve 1", func(m *lwsGroupModel) { m.Serving.ReserveFraction = types.Float64Value(1) }, "less than 1"},
		{"bad gpu memory", func(m *lwsGroupModel) { m.Serving.GPUMemory = types.StringValue("80GB") }, `"80GB"`},
		{"gpu memory unknown", func(m *lwsGroupModel) { m.Serving.GPUMemory = types.StringUnknown() }, ""},
		{"pvc cache without claim", func(m *lwsGroupModel) { m.ModelCache.Mode = types.StringValue("pvc") }, "claim_name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := group()
			tc.edit(m)
			diags := validateLWS(m)
			var got []string
			for _, d := range diags {
				got = append(got, d.Detail())
			}
			switch {
			case tc.want == "" && diags.HasError():
				t.Errorf("unexpected errors: %v", got)
			case tc.want != "" && (!diags.HasError() || !strings.Contains(strings.Join(got, "\n"), tc.want)):
				t.Errorf("errors %q, want one containing %q", got, tc.want)
			}
		})
	}
}

// An env var from a Secret is not read as an empty literal (which the next
// apply would write back over the reference).
func TestLWSEnvFromSecretNotReadAsEmpty(t *testing.T) {
	tmpl := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
		"name": "nginx", "image": "nginx",
		"env": []any{
			map[string]any{"name": "MODE", "value": "serve"},
			map[string]any{"name": "API_KEY", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "k", "key": "key"}}},
		},
	}}}}
	got := object.MapOut(shorthandIn(tmpl, nil).Env)
	if len(got) != 1 || got["MODE"] != "serve" {
		t.Fatalf("env read as %v, want only MODE", got)
	}
}

// replicas = 0, chosen, warns with the cold start's load time: 140e9 B at
// 1 GiB/s from the node-local cache = 130.4 → 131 s; the startup probe
// allows 39 × 10 s.
func TestLWSScaleToZeroWarns(t *testing.T) {
	m := group()
	m.Replicas, m.AllowScaleToZero = types.Int64Value(0), types.BoolValue(true)
	diags := warnScaleToZero(m)
	if diags.HasError() || len(diags) != 1 || !strings.Contains(diags[0].Detail(), "about 131 s at 1073 MB/s from the model cache, and the startup probe allows 390 s") {
		t.Fatalf("diagnostics %v", diags)
	}
	if derive(m); m.MaxConcurrency.ValueInt64() != 0 || m.GPUsTotal.ValueInt64() != 0 {
		t.Errorf("max_concurrency %v, gpus_total %v with no replicas", m.MaxConcurrency, m.GPUsTotal)
	}
	m.Replicas = types.Int64Value(1)
	if d := warnScaleToZero(m); len(d) != 0 {
		t.Errorf("warned with replicas 1: %v", d)
	}
}

// The server's probes are the group's: reading them back leaves them out,
// and a template that sets one itself is refused.
func TestLWSProbesAreTheGroups(t *testing.T) {
	m := group()
	m.Leader.ContainerName, m.Leader.Image = types.StringNull(), types.StringNull()
	m.Leader.Template.Containers = []podtemplate.Container{m.Leader.shorthandContainer()}
	m.Leader.Command, m.Leader.Args, m.Leader.Env, m.Leader.GPUs, m.Leader.CPU, m.Leader.Memory = nil, nil, types.MapNull(types.StringType), types.Int64Null(), types.StringNull(), types.StringNull()
	live := kube.NewObject(lwsKind, m.ObjectRef(), lwsFields(m)).Object
	leader := object.Fields(live, "spec", "leaderWorkerTemplate", "leaderTemplate")
	c := mainContainer(leader, "main")
	for _, f := range serverProbeFields {
		if c[f] == nil {
			t.Fatalf("leader server has no %s", f)
		}
	}
	own := ownTemplate(leader, "main", true, true)
	for _, f := range serverProbeFields {
		if mainContainer(own, "main")[f] != nil {
			t.Errorf("read back with the group's %s", f)
		}
	}
	m.Leader.Template.Containers[0].LivenessProbe = &podtemplate.Probe{}
	diags := validateTemplate(m.Leader, path.Root("leader"), true, true)
	if !diags.HasError() || !strings.Contains(diags[0].Detail(), "leader.containers[0].liveness_probe: serving sets") {
		t.Errorf("diagnostics %v", diags)
	}
}

// A group recorded before the probes existed reads readiness_path as null,
// which differs from the default the configuration plans: the next apply
// updates it and adds the liveness and readiness probes.
func TestLWSOldRecordPlansTheProbes(t *testing.T) {
	s := servingFromRecord(`{"paramsBillion":70,"dtype":"bf16","healthPath":"/health"}`)
	if s == nil || !s.ReadinessPath.IsNull() || s.HealthPath.ValueString() != "/health" {
		t.Fatalf("read %+v", s)
	}
}
