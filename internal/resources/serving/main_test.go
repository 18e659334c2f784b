package serving_test

import (
	"context"
	"os"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// One cluster for the package, judged by the real operators, installed from
// their charts and run by testenv's pod runner (Options.Controllers): the
// KubeRay operator (first: Kueue's RayCluster integration needs its CRDs),
// the LeaderWorkerSet controller, and the Kueue manager with its Job and
// RayCluster integrations, so that Kueue judges a queued RayCluster as a
// whole. The LWS tests'
// GPU pool is two fake 8-GPU H100 nodes whose nvidia.com/gpu.memory label
// says 81559 MiB, as NVIDIA's GPU feature discovery publishes it, with the
// CPUs and memory of such a machine (192 vCPUs, 2 TiB), so that the
// examples' production-sized pods schedule and the apply's readiness wait
// sees them Ready, and a 4-GPU node without that label; the Ray tests add
// their own nodes.
//
// The InferencePool tests add the Gateway API Inference Extension's CRDs
// (from the module cache) and its endpoint picker, which the pod runner runs
// for the picker pods aiplatform_inference_pool creates.
func TestMain(m *testing.M) {
	crds, err := testenv.InferencePoolCRDDir(context.Background())
	if err != nil && os.Getenv("TF_ACC") != "" {
		panic(err)
	}
	testenv.Main(m, testenv.Options{
		CRDDirs:     []string{crds},
		Controllers: []testenv.Controller{testenv.KubeRay(), testenv.LWS(), testenv.Kueue("batch/job", "ray.io/raycluster"), testenv.EndpointPicker()},
		Nodes: []testenv.NodePool{
			{Name: "lws-h100", Count: 2, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", GPUMemory: "81559", CPU: "192", Memory: "2048Gi", Labels: map[string]string{lwsPoolLabel: "h100"}},
			{Name: "lws-nolabel", Count: 1, GPUs: 4, Product: "TEST-GPU", Labels: map[string]string{lwsPoolLabel: "nolabel"}},
		},
	})
}
