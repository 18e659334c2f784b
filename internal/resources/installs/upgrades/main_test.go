// Package upgrades_test holds the installs' upgrades in place under live
// work (issue #29): each installs the previous version of a controller with
// objects and running workloads, upgrades it, and checks that the objects
// and pods are the same ones, that the new controller reconciles them and
// that the plan after is empty. The installs' code is in
// internal/resources/installs; these tests are a package of their own so
// that they run beside the other installs' tests, each package on its own
// cluster.
package upgrades_test

import (
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// One cluster for the package, with no controller installed: the tests
// install them. Two CPU nodes (kwok) run the charts' pods; the pod runner
// runs the controllers' pods, each of the version its image's tag names.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{PodRunner: true, Nodes: []testenv.NodePool{{Name: "cpu", Count: 2}}})
}
