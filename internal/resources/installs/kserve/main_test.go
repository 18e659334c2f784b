// Package kserve_test holds the acceptance tests of aiplatform_kserve (its
// code is in internal/resources/installs). They are a package of their own so
// that they run beside the other installs' tests, each package on its own
// cluster: KServe's CRDs are the largest of any install, and its manager and
// the LLMInferenceService controller are built on request only (their cold
// build takes long).
package kserve_test

import (
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

// One cluster for the package, with two CPU nodes (kwok) for the charts'
// pods; the pod runner runs KServe's manager and the LLMInferenceService
// controller, webhooks and all.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{PodRunner: true, Adapters: []*podrunner.Adapter{podrunner.KServe, podrunner.LLMISvc}, Nodes: []testenv.NodePool{{Name: "cpu", Count: 2}}})
}
