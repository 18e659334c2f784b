package serving

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	kjson "k8s.io/apimachinery/pkg/util/json"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

func sampleRayService() rayServiceModel {
	c := sampleRayCluster()
	m := rayServiceModel{
		rayClusterSpec:       c.rayClusterSpec,
		ServeConfig:          types.StringValue("applications:\n- name: llm\n  import_path: serve_app:app\n"),
		UpgradeStrategy:      &rayUpgradeStrategy{Type: types.StringValue(rayUpgradeNewCluster), MaxSurgePercent: types.Int64Null(), StepSizePercent: types.Int64Null(), IntervalSeconds: types.Int64Null(), GatewayClassName: types.StringNull()},
		ClusterDeletionDelay: types.Int64Value(30),
		InitializingTimeout:  types.StringValue("30m"),
		ExcludeHeadFromServe: types.BoolNull(),
		WaitForReady:         types.BoolValue(true),
	}
	m.SetObjectRef(kube.Ref{Namespace: "ns", Name: "llm"})
	return m
}

func rayServiceLive(t *testing.T, m *rayServiceModel, edit func(obj map[string]any)) map[string]any {
	t.Helper()
	obj := kube.NewObject(rayServiceKind, m.ObjectRef(), rayServiceFields(m)).Object
	b, _ := json.Marshal(obj)
	var out map[string]any
	if err := kjson.Unmarshal(b, &out); err != nil { // integers as int64, as the client gives them
		t.Fatal(err)
	}
	if edit != nil {
		edit(out)
	}
	return out
}

// The service's cluster config is the RayCluster's mapping: what was written
// reads back unchanged, with the CRD's defaults and the status added.
func TestRayServiceReadBackNoDiff(t *testing.T) {
	want := sampleRayService()
	got := sampleRayService()
	readRayService(rayServiceLive(t, &got, func(obj map[string]any) {
		wg := object.Items(obj, "spec", "rayClusterConfig", "workerGroupSpecs")[0]
		wg["maxReplicas"] = int64(kuberayMaxReplicas)
		wg["numOfHosts"] = int64(1)
		obj["status"] = map[string]any{"pendingServiceStatus": map[string]any{"rayClusterName": "llm-abcde"}}
	}), &got)
	want.HeadServiceName = types.StringValue("llm-head-svc")
	want.DashboardAddress = types.StringValue("llm-head-svc.ns.svc:8265")
	want.ServeServiceName = types.StringValue("llm-serve-svc")
	want.PendingClusterName = types.StringValue("llm-abcde")
	want.ActiveClusterName = types.StringValue("")
	want.ApplicationNames = object.ListValue([]string{"llm"})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back:\n%+v\nwant\n%+v", got, want)
	}
	// The queue label and suspend of a RayCluster have no place here.
	if _, has := object.Fields(rayServiceFields(&want), "spec", "rayClusterConfig")["suspend"]; has {
		t.Error("rayClusterConfig.suspend written")
	}
}

// An import reads the service as written, and lists no unexpressed field;
// a custom serve Service is listed.
func TestRayServiceImport(t *testing.T) {
	src := sampleRayService()
	src.UpgradeStrategy = &rayUpgradeStrategy{Type: types.StringValue(rayUpgradeIncremental), MaxSurgePercent: types.Int64Null(),
		StepSizePercent: types.Int64Value(10), IntervalSeconds: types.Int64Value(30), GatewayClassName: types.StringValue("istio")}
	live := rayServiceLive(t, &src, func(obj map[string]any) {
		object.Fields(obj, "spec", "upgradeStrategy", "clusterUpgradeOptions")["maxSurgePercent"] = int64(100) // CRD default
	})
	var got rayServiceModel
	got.SetObjectRef(src.ObjectRef())
	readRayService(live, &got)
	if got.ServeConfig != src.ServeConfig || got.UpgradeStrategy.Type.ValueString() != rayUpgradeIncremental ||
		!got.UpgradeStrategy.MaxSurgePercent.IsNull() || got.UpgradeStrategy.StepSizePercent.ValueInt64() != 10 ||
		got.ClusterDeletionDelay.ValueInt64() != 30 || got.InitializingTimeout.ValueString() != "30m" ||
		got.WorkerGroups[0].GPUs.ValueInt64() != 4 || !got.WaitForReady.ValueBool() {
		t.Errorf("imported %+v", got)
	}
	if paths := rayServiceUnexpressed(live, &got); len(paths) != 0 {
		t.Errorf("unexpressed after import: %v", paths)
	}
	object.Fields(live, "spec")["serveService"] = map[string]any{"metadata": map[string]any{"name": "custom"}}
	if paths := rayServiceUnexpressed(live, &got); len(paths) != 1 || !strings.Contains(paths[0], "serveService") {
		t.Errorf("unexpressed with a custom serve Service: %v", paths)
	}
}

func TestRayServeApplications(t *testing.T) {
	apps, err := rayServeApplications("applications:\n- import_path: a:app\n")
	if err != nil || len(apps) != 1 || apps[0].Name != "default" || apps[0].ImportPath != "a:app" {
		t.Errorf("one unnamed application: %v %v", apps, err)
	}
	for cfg, want := range map[string]string{
		"":                   "must be a YAML mapping",
		"applications: []":   "non-empty list",
		"applications:\n- 3": "applications[0] must be a mapping",
		"applications:\n- name: [1]\n  import_path: a:b": "applications[0].name must be a string",
	} {
		if _, err := rayServeApplications(cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", cfg, err, want)
		}
	}
}

// KubeRay 1.6's RayService controller adds its finalizer with a full update,
// which stores every worker group's scaleStrategy and template.metadata as
// {}. The next apply keeps them — an apply that removed them would change
// live fields its plan does not show — and nothing reads them as drift;
// where the live object has no such struct, none is written.
func TestRayServiceKeepsKubeRayEmptyStructs(t *testing.T) {
	m := sampleRayService()
	live := rayServiceLive(t, &m, func(obj map[string]any) {
		for _, g := range object.Items(obj, "spec", "rayClusterConfig", "workerGroupSpecs") {
			g["scaleStrategy"] = map[string]any{}
			object.Fields(g, "template")["metadata"] = map[string]any{}
		}
	})
	fields := rayServiceFields(&m)
	if _, err := beforeApplyRayService(t.Context(), &m, fields, func() (map[string]any, error) { return live, nil }); err != nil {
		t.Fatal(err)
	}
	got := object.Fields(fields, "spec", "rayClusterConfig")
	want := object.Fields(live, "spec", "rayClusterConfig")
	if !reflect.DeepEqual(object.Items(got, "workerGroupSpecs"), object.Items(want, "workerGroupSpecs")) {
		t.Errorf("applied worker groups differ from the live ones:\n got %v\nlive %v", object.Items(got, "workerGroupSpecs"), object.Items(want, "workerGroupSpecs"))
	}
	if u := rayServiceUnexpressed(live, &m); len(u) != 0 {
		t.Errorf("unexpressed: %v", u)
	}

	bare := rayServiceFields(&m)
	plain := rayServiceLive(t, &m, nil)
	if _, err := beforeApplyRayService(t.Context(), &m, bare, func() (map[string]any, error) { return plain, nil }); err != nil {
		t.Fatal(err)
	}
	for _, g := range object.Items(bare, "spec", "rayClusterConfig", "workerGroupSpecs") {
		if _, has := g["scaleStrategy"]; has {
			t.Errorf("scaleStrategy written where the live group has none: %v", g)
		}
		if _, has := object.Fields(g, "template")["metadata"]; has {
			t.Errorf("template.metadata written where the live group has none: %v", g)
		}
	}
}
