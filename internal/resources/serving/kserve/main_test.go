// Package kserve_test runs aiplatform_serving_runtime against KServe's own
// controller: a cluster of its own, so that the serving package's other
// tests do not start KServe (its manager is a large build and process).
package kserve_test

import (
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

const poolLabel = "kservepool"

// KServe's manager (chart kserve-resources, deployment mode Standard: an
// InferenceService becomes a Deployment) with its webhooks served, the
// LLMInferenceService controller (charts kserve-llmisvc-*), and an
// H100 pool whose nvidia.com/gpu.memory label says 81559 MiB.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{
		Controllers: []testenv.Controller{testenv.KServe(), testenv.LLMISvc()},
		Nodes: []testenv.NodePool{
			{Name: "ks-h100", Count: 1, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", GPUMemory: "81559", Labels: map[string]string{poolLabel: "h100"}},
		},
	})
}
