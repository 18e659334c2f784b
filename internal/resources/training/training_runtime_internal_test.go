package training

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
)

func str(s string) types.String { return types.StringValue(s) }

func fullRuntime(framework string, nodes int64) *runtimeModel {
	m := &runtimeModel{
		ID: str("rt"), Name: str("rt"), Namespace: types.StringNull(),
		Framework: str(framework), NumNodes: types.Int64Value(nodes), Image: str("img:1"),
		Command: []types.String{str("run")}, ProcsPerNode: types.Int64Null(),
		Resources:         &runtimeResources{GPUs: types.Int64Value(8), GPUResource: str("nvidia.com/gpu"), CPU: str("2"), Memory: str("4Gi")},
		NodeSelector:      stringMap(map[string]string{"pool": "a"}),
		Gang:              &runtimeGang{KueueQueue: types.StringNull(), Scheduler: str(SchedulerCoscheduling), ScheduleTimeout: str("5m")},
		Checkpoint:        &runtimeCheckpoint{ClaimName: str("ckpt"), MountPath: str("/checkpoints"), Env: str("CHECKPOINT_DIR")},
		FailurePolicy:     &runtimeFailurePolicy{MaxRestarts: types.Int64Value(3)},
		Env:               stringMap(map[string]string{"NCCL_DEBUG": "WARN"}),
		SecretEnv:         []runtimeSecretEnv{{Name: str("HF_TOKEN"), Secret: str("hf"), Key: str("token")}},
		PriorityClassName: str("low"),
	}
	m.LiveChanges.AcceptLiveChanges = types.ListNull(types.StringType)
	setComputed(m)
	return m
}

// numbers turns JSON numbers into int64 (all the runtime's are whole).
func numbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	case json.Number:
		n, _ := x.Int64()
		return n
	}
	return v
}

// live is what the server returns for fields: JSON numbers as int64.
func live(t *testing.T, fields map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	if err := d.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return numbers(out).(map[string]any)
}

// Every attribute written reads back as written: no diff after an apply,
// for each framework's shape.
func TestRuntimeRoundTrip(t *testing.T) {
	for _, fw := range []string{FrameworkTorch, FrameworkJAX, FrameworkMPI, FrameworkDeepSpeed} {
		t.Run(fw, func(t *testing.T) {
			want := fullRuntime(fw, 3)
			if fw == FrameworkMPI {
				want.ProcsPerNode = types.Int64Value(4)
			}
			got := *want
			readRuntime(live(t, runtimeFields(want)), &got)
			if !reflect.DeepEqual(*want, got) {
				t.Errorf("read back differs:\nwant %+v\n got %+v", *want, got)
			}
		})
	}
}
