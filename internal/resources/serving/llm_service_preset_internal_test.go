package serving

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// A preset's router and parallelism are KServe's: {} for a managed piece,
// refs for existing ones; reading the object back gives the model that
// wrote it, and the pod's GPUs are tensor × data_local.
func TestPresetRoundTrip(t *testing.T) {
	r := testRuntime()
	m := &presetModel{
		Model:  &presetLLM{URI: types.StringValue("hf://meta-llama/Llama-3.1-8B-Instruct"), Name: types.StringNull()},
		Sizing: r.Model,
		Parallelism: &presetParallelism{Tensor: types.Int64Value(2), Pipeline: types.Int64Null(), Data: types.Int64Value(4),
			DataLocal: types.Int64Value(2), Expert: types.BoolNull()},
		Replicas: types.Int64Null(), Template: r.Template, Container: types.StringValue("kserve-container"),
		GPUMemory: r.GPUMemory, ReserveFraction: r.ReserveFraction, OverheadBytesPerGPU: r.OverheadBytesPerGPU, LoadBytesPerSecond: r.LoadBytesPerSecond,
		Port: types.Int64Value(8000), LivenessPath: r.LivenessPath, ReadinessPath: r.ReadinessPath, ModelCache: r.ModelCache,
		Router: &presetRouter{Route: types.BoolValue(true), Gateway: types.BoolNull(), Scheduler: types.BoolValue(true), SchedulerReplicas: types.Int64Null(),
			GatewayRefs: []presetRef{{Name: types.StringValue("inference"), Namespace: types.StringNull()}}},
		GPUsPerPod: types.Int64Unknown(), StartupFailureThreshold: types.Int64Unknown(),
	}
	fields := presetFields(m)
	if m.GPUsPerPod.ValueInt64() != 4 {
		t.Errorf("gpus_per_pod %v, want 2 × 2", m.GPUsPerPod)
	}
	b, _ := json.Marshal(fields)
	var live map[string]any
	_ = json.Unmarshal(b, &live)
	router := live["spec"].(map[string]any)["router"].(map[string]any)
	if !reflect.DeepEqual(router["route"], map[string]any{}) || !reflect.DeepEqual(router["scheduler"], map[string]any{}) {
		t.Errorf("router %v", router)
	}
	got := *m
	readPreset(live, &got)
	if !reflect.DeepEqual(got.Router, m.Router) || !reflect.DeepEqual(got.Parallelism, m.Parallelism) || !reflect.DeepEqual(got.Model, m.Model) ||
		!reflect.DeepEqual(got.Sizing, m.Sizing) || !got.StartupFailureThreshold.Equal(m.StartupFailureThreshold) ||
		!reflect.DeepEqual(got.ModelCache, m.ModelCache) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, *m)
	}
}

// Importing KServe's own data-parallel worker preset (from the module
// cache) names what no attribute expresses — its multi-node worker — and
// what template.pod_template carries (the preStop hook, the seccomp
// profile); the routing annotation is template.annotations, and reading
// does not fail on a preset this provider never wrote (no sizing
// annotation).
func TestPresetImportReport(t *testing.T) {
	dir, err := testenv.ModuleDir(context.Background(), "github.com/kserve/kserve", "v0.20.0")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "config", "llmisvcconfig", "config-llm-worker-data-parallel.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var live map[string]any
	if err := yaml.Unmarshal(raw, &live); err != nil {
		t.Fatal(err)
	}
	var m presetModel
	readPreset(live, &m)
	carried, lost := presetImportReport(live, &m)
	lostText, carriedText := strings.Join(lost, "\n"), strings.Join(carried, "\n")
	for _, want := range []string{"spec.worker.containers", "spec.worker.volumes"} {
		if !strings.Contains(lostText, want) {
			t.Errorf("lost lacks %s:\n%s", want, lostText)
		}
	}
	if strings.Contains(lostText, "spec.template") || strings.Contains(lostText, "spec.annotations") {
		t.Errorf("lost names the template or its annotations, which attributes carry:\n%s", lostText)
	}
	if !strings.Contains(carriedText, "lifecycle.preStop.exec.command") || !strings.Contains(carriedText, "seccompProfile.type") {
		t.Errorf("carried lacks the container's preStop hook or seccomp profile:\n%s", carriedText)
	}
}
