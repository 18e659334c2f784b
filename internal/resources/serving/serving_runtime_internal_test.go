package serving

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/podtemplate"
)

func testRuntime() *servingRuntimeModel {
	str := types.StringValue
	return &servingRuntimeModel{
		ID: str("vllm"), Name: str("vllm"), Namespace: types.StringNull(),
		ModelFormats: []runtimeFormat{{Name: str("vLLM"), Version: str("1"), AutoSelect: types.BoolValue(true), Priority: types.Int64Value(2)},
			{Name: str("huggingface"), Version: types.StringNull(), AutoSelect: types.BoolNull(), Priority: types.Int64Null()}},
		ProtocolVersions: []types.String{str("v2")},
		MultiModel:       types.BoolValue(false), Disabled: types.BoolValue(false),
		Template: &podtemplate.Template{
			Labels: types.MapNull(types.StringType), Annotations: types.MapValueMust(types.StringType, map[string]attrValue{"a": str("b")}),
			Containers: []podtemplate.Container{{Name: str("kserve-container"), Image: str("vllm/vllm-openai:v0.9.0"),
				Limits: types.MapValueMust(types.StringType, map[string]attrValue{"cpu": str("8")}), Requests: types.MapNull(types.StringType)}},
			NodeSelector: types.MapValueMust(types.StringType, map[string]attrValue{"pool": str("h100")}),
		},
		Container: str("kserve-container"),
		Model: &deployModelSpec{ParamsBillion: types.Float64Value(8), DType: str("bf16"), ModelBytes: types.Int64Null(),
			ContextLength: types.Int64Value(32768), KVCacheBytesPerToken: types.Int64Value(131072), AttentionHeads: types.Int64Value(32), KVHeads: types.Int64Value(8)},
		GPUsPerReplica: types.Int64Value(1), GPUMemory: str("81559Mi"), ReserveFraction: types.Float64Value(0.1), OverheadBytesPerGPU: types.Int64Value(1 << 30),
		LoadBytesPerSecond: types.Int64Null(), Port: types.Int64Value(8080), LivenessPath: str("/health"), ReadinessPath: str("/v1/models"),
		ModelCache: &deployCache{Mode: str("pvc"), ClaimName: str("cache"), HostPath: types.StringNull(), SubPath: str("rev"), MountPath: str("/mnt/model-cache")},
		Fit:        types.StringUnknown(), MaxConcurrency: types.Int64Unknown(), EstimatedLoadSeconds: types.Int64Unknown(), StartupFailureThreshold: types.Int64Unknown(),
	}
}

// The runtime's spec is KServe's layout: the pod spec inlined, the pod's
// annotations beside it, the managed container decorated as a model
// deployment's; reading it back gives the model that wrote it.
func TestServingRuntimeRoundTrip(t *testing.T) {
	m := testRuntime()
	fields := servingRuntimeFields(m)
	spec := fields["spec"].(map[string]any)
	if got := fmt.Sprint(spec["annotations"]); got != "map[a:b]" {
		t.Errorf("pod annotations %s, want them at spec.annotations", got)
	}
	for _, k := range []string{"metadata", "spec", "template"} {
		if _, ok := spec[k]; ok {
			t.Errorf("spec.%s: the pod spec is inlined, not nested", k)
		}
	}
	c := spec["containers"].([]any)[0].(map[string]any)
	if got := fmt.Sprint(c["startupProbe"]); !strings.Contains(got, "failureThreshold:") || !strings.Contains(got, "port:8080") {
		t.Errorf("startup probe %s", got)
	}
	// 16 GB from a claim at 200 MiB/s: 76.3 s, ⌈(76.3 + 60) × 2 ÷ 10⌉ = 28.
	if m.StartupFailureThreshold.ValueInt64() != 28 || m.MaxConcurrency.ValueInt64() != 13 {
		t.Errorf("threshold %v, concurrency %v; want 28 and 13", m.StartupFailureThreshold, m.MaxConcurrency)
	}
	// Through JSON, as the API server returns it.
	b, _ := json.Marshal(fields)
	var live map[string]any
	_ = json.Unmarshal(b, &live)
	got := *m
	got.Template = &podtemplate.Template{}
	*got.Template = *m.Template
	readServingRuntime(live, &got)
	want := *m
	if !reflect.DeepEqual(got.ModelFormats, want.ModelFormats) || !reflect.DeepEqual(got.ProtocolVersions, want.ProtocolVersions) ||
		!got.GPUsPerReplica.Equal(want.GPUsPerReplica) || !got.StartupFailureThreshold.Equal(want.StartupFailureThreshold) ||
		!got.LivenessPath.Equal(want.LivenessPath) || !got.Port.Equal(want.Port) || !reflect.DeepEqual(got.ModelCache, want.ModelCache) ||
		!reflect.DeepEqual(got.Model, want.Model) || !got.GPUMemory.Equal(want.GPUMemory) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, want)
	}
	if len(got.Template.Containers) != 1 || !got.Template.Containers[0].Limits.Equal(want.Template.Containers[0].Limits) ||
		!got.Template.Annotations.Equal(want.Template.Annotations) || !got.Template.NodeSelector.Equal(want.Template.NodeSelector) {
		t.Errorf("template read back %+v", got.Template)
	}
}

func TestValidateFormats(t *testing.T) {
	str, on, prio := types.StringValue, types.BoolValue(true), types.Int64Value
	for name, tc := range map[string]struct {
		formats []runtimeFormat
		want    string
	}{
		"ok": {[]runtimeFormat{{Name: str("vLLM"), Version: str("1"), AutoSelect: on, Priority: prio(1)}, {Name: str("vLLM"), Version: str("2"), AutoSelect: on, Priority: prio(1)}}, ""},
		"duplicate": {[]runtimeFormat{{Name: str("vLLM"), Version: str("1")}, {Name: str("VLLM"), Version: str("1")}},
			`format "VLLM" version "1" is already listed at supported_model_formats[0]`},
		"priority without auto_select": {[]runtimeFormat{{Name: str("vLLM"), Priority: prio(3)}}, "priority 3 only orders runtimes"},
		"two priorities": {[]runtimeFormat{{Name: str("vLLM"), Version: str("1"), AutoSelect: on, Priority: prio(1)}, {Name: str("vllm"), Version: str("2"), AutoSelect: on, Priority: prio(2)}},
			`format "vllm" has priority 2 here and 1 at supported_model_formats[0]`},
	} {
		for i := range tc.formats {
			f := &tc.formats[i]
			for _, v := range []*types.String{&f.Version} {
				if v.IsUnknown() || (*v == types.String{}) {
					*v = types.StringNull()
				}
			}
			if f.AutoSelect == (types.Bool{}) {
				f.AutoSelect = types.BoolNull()
			}
			if f.Priority == (types.Int64{}) {
				f.Priority = types.Int64Null()
			}
		}
		diags := validateFormats(tc.formats)
		got := ""
		for _, d := range diags {
			got += d.Detail()
		}
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %q, want %q", name, got, tc.want)
		}
	}
}

func TestCheckRuntimeOverlay(t *testing.T) {
	diags := checkRuntimeOverlay(map[string]any{"spec": map[string]any{"hostIPC": true, "hostNetwork": true}, "metadata": map[string]any{"labels": map[string]any{}}}, pathRoot("template"))
	if len(diags) != 1 || !strings.Contains(diags[0].Detail(), "no spec.hostNetwork") || strings.Contains(diags[0].Detail(), "spec.hostIPC (") {
		t.Errorf("got %v", diags)
	}
}

type attrValue = attr.Value

func pathRoot(name string) path.Path { return path.Root(name) }

// An import names what the configuration cannot express (a multi-node
// workerSpec, the object's own labels) and what pod_template carries.
func TestServingRuntimeImportReport(t *testing.T) {
	live := map[string]any{
		"metadata": map[string]any{"name": "hf", "labels": map[string]any{"team": "ml"},
			"annotations": map[string]any{"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
		"spec": map[string]any{
			"supportedModelFormats": []any{map[string]any{"name": "huggingface", "autoSelect": true}},
			"containers":            []any{map[string]any{"name": "kserve-container", "image": "kserve/huggingfaceserver:latest", "tty": true}},
			"hostIPC":               false,
			"workerSpec":            map[string]any{"tensorParallelSize": int64(1)},
		},
	}
	var m servingRuntimeModel
	readServingRuntime(live, &m)
	carried, lost := runtimeImportReport(live, &m)
	if got := strings.Join(lost, ","); got != "metadata.labels.team,spec.workerSpec" {
		t.Errorf("lost %s", got)
	}
	if got := strings.Join(carried, ","); !strings.Contains(got, "tty") {
		t.Errorf("carried %s, want the container's tty", got)
	}
	if m.Container.ValueString() != "kserve-container" || m.ModelFormats[0].AutoSelect.ValueBool() != true {
		t.Errorf("read %+v", m)
	}
}
