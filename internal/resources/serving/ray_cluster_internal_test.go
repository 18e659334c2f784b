package serving

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

func rayStrMap(kv ...string) types.Map {
	m := map[string]attr.Value{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = types.StringValue(kv[i+1])
	}
	return types.MapValueMust(types.StringType, m)
}

func sampleRayCluster() rayClusterModel {
	m := rayClusterModel{rayClusterSpec: rayClusterSpec{
		RayVersion: types.StringValue("2.46.0"), Image: types.StringNull(),
		Head: &rayHead{rayPod: rayPod{CPU: types.StringValue("1000m"), Memory: types.StringValue("2Gi"), GPUs: types.Int64Null()},
			RayStartParams: rayStrMap("dashboard-host", "0.0.0.0"), ServiceType: types.StringValue("ClusterIP")},
		WorkerGroups: []rayWorkerGroup{{
			Name: types.StringValue("gpu"), Replicas: types.Int64Value(2), MinReplicas: types.Int64Value(0), MaxReplicas: types.Int64Null(),
			rayPod:         rayPod{CPU: types.StringValue("4"), Memory: types.StringValue("16Gi"), GPUs: types.Int64Value(4)},
			NodeSelector:   rayStrMap("pool", "a"),
			Tolerations:    []object.Toleration{{Key: types.StringValue("nvidia.com/gpu"), Operator: types.StringValue("Exists"), Value: types.StringNull(), Effect: types.StringNull()}},
			RayStartParams: types.MapNull(types.StringType),
		}},
		Autoscaling: &rayAutoscaling{Enabled: types.BoolValue(true), IdleTimeout: types.StringValue("300s")},
		ModelCache:  &modelCacheModel{Mode: types.StringValue("pvc"), ClaimName: types.StringValue("c"), HostPath: types.StringNull(), SubPath: types.StringValue("m/main"), MountPath: types.StringValue("/models")},
	},
		QueueName:    types.StringValue("team-a"),
		Suspend:      types.BoolNull(),
		WaitForReady: types.BoolValue(true),
	}
	m.SetObjectRef(kube.Ref{Namespace: "ns", Name: "train"})
	return m
}

// live is what the API server returns for the applied fields, after KubeRay's
// CRD defaults and Kueue's admission have been added.
func rayLive(t *testing.T, m *rayClusterModel, edit func(obj map[string]any)) map[string]any {
	t.Helper()
	obj := kube.NewObject(rayClusterKind, m.ObjectRef(), rayClusterFields(m)).Object
	b, _ := json.Marshal(obj) // numbers as JSON gives them
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(out)
	}
	return out
}

// What the provider wrote reads back unchanged, whatever KubeRay and Kueue
// added: a refresh never invents a diff.
func TestRayClusterReadBackNoDiff(t *testing.T) {
	want := sampleRayCluster()
	got := sampleRayCluster()
	readRayCluster(rayLive(t, &got, func(obj map[string]any) {
		wg := object.Items(obj, "spec", "workerGroupSpecs")[0]
		wg["maxReplicas"] = float64(kuberayMaxReplicas) // CRD default
		wg["replicas"] = float64(3)                     // the autoscaler's
		spec := object.Fields(wg, "template", "spec")
		spec["nodeSelector"].(map[string]any)["kueue-flavor"] = "x" // Kueue's admission
		spec["tolerations"] = append(spec["tolerations"].([]any), map[string]any{"key": "flavor", "operator": "Exists"})
		object.Fields(obj, "spec")["suspend"] = true // Kueue's
		obj["status"] = map[string]any{"state": "ready", "readyWorkerReplicas": float64(2)}
	}), &got)
	want.HeadServiceName = types.StringValue("train-head-svc")
	want.DashboardAddress = types.StringValue("train-head-svc.ns.svc:8265")
	want.ClientAddress = types.StringValue("ray://train-head-svc.ns.svc:10001")
	want.ReadyWorkers = types.Int64Value(2)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back:\n%+v\nwant\n%+v", got, want)
	}
}

// Import (everything null before the read) gives what a configuration that
// leaves KubeRay's defaults alone states.
func TestRayClusterImport(t *testing.T) {
	src := sampleRayCluster()
	src.Autoscaling.IdleTimeout = types.StringValue("5m")
	obj := rayLive(t, &src, nil)
	var got rayClusterModel
	got.SetObjectRef(src.ObjectRef())
	readRayCluster(obj, &got)
	if got.Autoscaling.IdleTimeout.ValueString() != "5m" || !got.WorkerGroups[0].MaxReplicas.IsNull() ||
		got.QueueName.ValueString() != "team-a" || !got.Suspend.IsNull() || !got.Image.IsNull() ||
		got.ModelCache.SubPath.ValueString() != "m/main" || !got.WaitForReady.ValueBool() {
		t.Errorf("imported %+v", got)
	}
}

func TestRayDuration(t *testing.T) {
	for secs, want := range map[int64]string{0: "0s", 90: "90s", 300: "5m", 7200: "2h"} {
		if got := rayDuration(secs); got != want {
			t.Errorf("rayDuration(%d) = %q, want %q", secs, got, want)
		}
	}
}

// The wait judges readiness by worker counts, since KubeRay 1.5 leaves
// observedGeneration behind when a change alters no status field.
func TestRayProgressByWorkerCounts(t *testing.T) {
	cluster := func(status string) map[string]any {
		var live map[string]any
		doc := `{"metadata": {"generation": 3}, "spec": {"workerGroupSpecs": [
			{"groupName": "a", "replicas": 3, "minReplicas": 1, "maxReplicas": 4},
			{"groupName": "b", "replicas": 0, "minReplicas": 1, "maxReplicas": 2, "numOfHosts": 2},
			{"groupName": "c", "replicas": 5, "minReplicas": 0, "maxReplicas": 2},
			{"groupName": "d", "replicas": 2, "minReplicas": 0, "maxReplicas": 2, "suspend": true}]},
			"status": ` + status + `}`
		if err := json.Unmarshal([]byte(doc), &live); err != nil {
			t.Fatal(err)
		}
		return live
	}
	if got := rayDesiredWorkers(cluster(`{}`)); got != 3+2+2 {
		t.Fatalf("desired workers: got %d, want 7 (3; min 1 × 2 hosts; max 2; suspended 0)", got)
	}
	for _, c := range []struct {
		status, want string
	}{
		// Ready although observedGeneration (2) lags generation (3).
		{`{"state": "ready", "observedGeneration": 2, "desiredWorkerReplicas": 7, "readyWorkerReplicas": 7}`, "ready"},
		// The status still describes the old spec (desired 6): not yet.
		{`{"state": "ready", "observedGeneration": 2, "desiredWorkerReplicas": 6, "readyWorkerReplicas": 6}`, ""},
		// The new workers are not ready yet.
		{`{"state": "ready", "desiredWorkerReplicas": 7, "readyWorkerReplicas": 5}`, ""},
		{`{"state": "suspended", "desiredWorkerReplicas": 7, "readyWorkerReplicas": 0}`, ""},
		{`{}`, ""},
	} {
		if got, line := rayProgress(cluster(c.status)); got != c.want {
			t.Errorf("status %s: state %q (%s), want %q", c.status, got, line, c.want)
		}
	}
}
