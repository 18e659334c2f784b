// Package servingkserve_test applies examples/serving-kserve with the
// terraform CLI: its aiplatform_kserve installs KServe's charts (from the
// module cache), whose controller pods the pod runner runs as KServe's real
// manager and llmisvc controller; the example is judged with KServe: an InferenceService of format vLLM that names no runtime gets the
// example's (auto_select), and its Deployment's pod is the runtime's.
package servingkserve_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

// One 8 x H100 node whose nvidia.com/gpu.memory label says 81559 MiB and a
// CPU node for the controllers; the pod runner runs the pods of KServe's
// charts (the example installs them).
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{
		Nodes: []testenv.NodePool{
			{Name: "h100", Count: 1, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", GPUMemory: "81559", CPU: "64", Memory: "512Gi"},
			{Name: "cpu", Count: 1},
		},
		PodRunner: true,
		Adapters:  []*podrunner.Adapter{podrunner.KServe, podrunner.LLMISvc},
	})
}

var isvcGVR = schema.GroupVersionResource{Group: "serving.kserve.io", Version: "v1beta1", Resource: "inferenceservices"}

func TestAccServingKServeExample(t *testing.T) {
	env := acctest.Env(t)
	ctx := context.Background()
	mod, err := testenv.ModuleDir(ctx, "github.com/kserve/kserve", "v0.20.0")
	if err != nil {
		t.Fatal(err)
	}
	w := acctest.NewWorkspace(t, env, ".")
	w.Env = append(w.Env, "TF_VAR_kserve_chart_path="+filepath.Join(mod, "charts", "kserve-resources"))
	if _, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatal(err)
	}
	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan -detailed-exitcode after apply exited %d, want 0:\n%s", code, out)
	}
	outs := w.Outputs()
	rt, _ := outs["runtime"].(map[string]any)
	preset, _ := outs["preset"].(map[string]any)
	if rt["kind"] != "ClusterServingRuntime" || rt["max_concurrency_per_replica"] != float64(13) ||
		preset["gpus_per_pod"] != float64(8) || preset["max_concurrency_per_replica"] != float64(60) {
		t.Fatalf("outputs: runtime %v, preset %v", rt, preset)
	}

	// A team's InferenceService names only the format: KServe picks the
	// example's runtime (auto_select) and builds its predictor from it.
	isvc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
		"metadata": map[string]any{"name": "chat", "namespace": "default"},
		"spec":     map[string]any{"predictor": map[string]any{"model": map[string]any{"modelFormat": map[string]any{"name": "vLLM"}}}},
	}}
	if _, err := env.Dynamic.Resource(isvcGVR).Namespace("default").Create(ctx, isvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Dynamic.Resource(isvcGVR).Namespace("default").Delete(ctx, "chat", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
	d, err := acctest.AwaitDeployment(env, "default", "chat-predictor", acctest.Object{GVR: isvcGVR, Namespace: "default", Name: "chat"}, 5*time.Minute)
	if err != nil {
		t.Fatalf("KServe made no predictor: %v", err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if q := c.Resources.Limits["nvidia.com/gpu"]; c.Image != "vllm/vllm-openai:v0.9.0" || q.Value() != 1 ||
		!strings.Contains(strings.Join(c.Args, " "), "--served-model-name chat") || c.StartupProbe == nil || c.StartupProbe.FailureThreshold != 15 {
		t.Fatalf("predictor container %s %q GPUs %s startup %+v: not the example's runtime", c.Image, c.Args, q.String(), c.StartupProbe)
	}
	if got := d.Spec.Template.Spec.NodeSelector["nvidia.com/gpu.product"]; got != "NVIDIA-H100-80GB-HBM3" {
		t.Fatalf("node selector %v, want the pool's", d.Spec.Template.Spec.NodeSelector)
	}
	// Serving traffic is not drift.
	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan -detailed-exitcode with the InferenceService running exited %d, want 0:\n%s", code, out)
	}
}
