package training_test

import (
	"regexp"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/training"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

const h100 = "NVIDIA-H100-80GB-HBM3"

// One cluster for the package: a 2-node 8-GPU pool the checks run on (and
// that the end-to-end test grows), a second 2-node pool for the node-join
// plan test, and a 1-node 2-GPU pool too small for 8 GPUs per node. Nodes
// imply the default StorageClass whose claims bind and may expand (the
// checkpoint stores). The MPI Operator runs the NCCL checks' MPIJobs; the
// pod runner runs their launcher container's own command (the end-to-end
// test's `cat <published log>`), whose output the provider reads as the
// launcher's log; workers (sshd) stay kwok's. JobSet, Kubeflow Trainer and
// Kueue (admitting TrainJobs) run the training runtimes' TrainJobs.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{
		Nodes: []testenv.NodePool{
			{Name: "nc", Count: 2, GPUs: 8, Product: h100, Labels: map[string]string{"testpool": "nc"}},
			{Name: "nj", Count: 2, GPUs: 8, Product: h100, Labels: map[string]string{"testpool": "nj"}},
			{Name: "small", Count: 1, GPUs: 2, Product: h100, Labels: map[string]string{"testpool": "small"}},
		},
		Controllers: []testenv.Controller{
			testenv.ControllerOf(podrunner.MPIOperator),
			testenv.ControllerOf(podrunner.JobSet),
			testenv.ControllerOf(podrunner.Trainer),
			// After Trainer: Kueue's TrainJob integration needs its CRDs.
			// batch/job too: the chart registers Kueue's Job webhook,
			// which panics on every Job (those of a TrainJob's JobSet
			// included) while that integration is off.
			testenv.Kueue(training.KueueJobIntegration, training.KueueTrainJobIntegration),
		},
		Commands: []testenv.Command{{Image: regexp.MustCompile(`^ghcr\.io/coreweave/nccl-tests:`), Container: "launcher"}},
	})
}
