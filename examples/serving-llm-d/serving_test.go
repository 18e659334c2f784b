// Package servingllmd_test applies examples/serving-llm-d with the terraform
// CLI and judges it live: the InferencePool is accepted by the API server,
// the real endpoint picker (run by testenv's pod runner with its
// ServiceAccount's token) becomes Ready and has added both model server
// pods, and the plan is empty afterwards.
package servingllmd_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// The cluster the example describes: a pool of two 8 x H100 nodes with
// NVIDIA's memory label, the InferencePool CRD from the module cache, and
// the endpoint picker run by the pod runner for the pool's picker pods. The
// model server pods are kwok's (Ready once scheduled).
func TestMain(m *testing.M) {
	crds, err := testenv.InferencePoolCRDDir(context.Background())
	if err != nil && os.Getenv("TF_ACC") != "" {
		panic(err)
	}
	testenv.Main(m, testenv.Options{
		Nodes: []testenv.NodePool{
			{Name: "h100", Count: 2, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", GPUMemory: "81559", CPU: "64", Memory: "512Gi"},
		},
		CRDDirs:     []string{crds},
		Controllers: []testenv.Controller{testenv.EndpointPicker()},
	})
}

var inferencePools = schema.GroupVersionResource{Group: "inference.networking.k8s.io", Version: "v1", Resource: "inferencepools"}

func TestAccServingLLMDExample(t *testing.T) {
	env := acctest.Env(t)
	ctx := context.Background()
	w := acctest.NewWorkspace(t, env, ".")
	if _, err := w.Run("apply", "-auto-approve"); err != nil {
		t.Fatal(err)
	}
	if code, out := w.PlanExitCode(); code != 0 {
		t.Fatalf("plan -detailed-exitcode after apply exited %d, want 0:\n%s", code, out)
	}

	pool, err := env.Dynamic.Resource(inferencePools).Namespace("default").Get(ctx, "llama-8b", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the InferencePool: %v", err)
	}
	ref, _ := pool.Object["spec"].(map[string]any)["endpointPickerRef"].(map[string]any)
	if ref["name"] != "llama-8b-epp" || ref["failureMode"] != "FailClose" {
		t.Errorf("endpointPickerRef %v, want the picker's Service llama-8b-epp, FailClose", ref)
	}
	picker, err := env.Client.AppsV1().Deployments("default").Get(ctx, "llama-8b-epp", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if picker.Status.AvailableReplicas != 1 {
		t.Errorf("picker available replicas %d, want 1", picker.Status.AvailableReplicas)
	}

	// The picker logged adding each Ready model pod while it synced the
	// pool, before it reported Ready.
	models, err := env.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "aiplatform.io/model-deployment=llama-8b"})
	if err != nil {
		t.Fatal(err)
	}
	pickers, err := env.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "aiplatform.io/inference-pool-epp=llama-8b"})
	if err != nil || len(pickers.Items) != 1 {
		t.Fatalf("picker pods: %d (%v), want 1", len(pickers.Items), err)
	}
	log, err := os.ReadFile(filepath.Join(env.Dir, "pods", "default_"+pickers.Items[0].Name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(models.Items) != 2 {
		t.Fatalf("%d model pods, want 2", len(models.Items))
	}
	for _, p := range models.Items {
		if !regexp.MustCompile(`Pod added[^\n]*[/"]` + regexp.QuoteMeta(p.Name) + `["-]`).Match(log) {
			t.Errorf("the picker did not add model pod %s; its log:\n%s", p.Name, log)
		}
	}
}
