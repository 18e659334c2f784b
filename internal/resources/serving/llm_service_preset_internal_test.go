package serving

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
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
