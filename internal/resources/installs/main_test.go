package installs_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// One cluster for the package, with no Kueue and no Volcano: the tests
// install them. Two CPU nodes (kwok) run the charts' pods, so the readiness
// waits complete. The pod runner runs the Kueue chart's controller pod as the
// real Kueue manager, whose webhooks (the chart's, failurePolicy Fail) the API
// server reaches through testenv's egress proxy: Kueue objects are judged by
// Kueue itself. Likewise LWS's chart runs the real LWS controller and the
// KubeRay chart the real KubeRay operator.
func TestMain(m *testing.M) {
	// aiplatform_kserve's tests are in installs/kserve: a package of its
	// own runs beside this one, on a cluster of its own.
	testenv.Main(m, testenv.Options{PodRunner: true, Nodes: []testenv.NodePool{{Name: "cpu", Count: 2}}})
}

// kueueChart is charts/kueue of sigs.k8s.io/kueue v0.17.0 in the module cache.
func kueueChart(t *testing.T) string { return acctest.KueueChartAt(t, "v0.17.0") }

// volcanoChart is the repository's stand-in for Volcano's chart.
func volcanoChart(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "testdata", "charts", "volcano")
}

var object = acctest.NewObject

var (
	kueueDeployment = object("apps", "v1", "deployments", "kueue-system", "kueue-controller-manager")
	kueueConfig     = object("", "v1", "configmaps", "kueue-system", "kueue-manager-config")
	volcanoSched    = object("apps", "v1", "deployments", "volcano-system", "volcano-scheduler")
	kueueCRD        = object("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "clusterqueues.kueue.x-k8s.io")
	volcanoCRD      = object("apiextensions.k8s.io", "v1", "customresourcedefinitions", "", "podgroups.scheduling.volcano.sh")
	kueueBatchAdmin = object("rbac.authorization.k8s.io", "v1", "clusterroles", "", "kueue-batch-admin-role")
	kueueBatchUser  = object("rbac.authorization.k8s.io", "v1", "clusterroles", "", "kueue-batch-user-role")
)

// kueueBlock is an aiplatform_kueue from the module's v0.17.0 chart.
func kueueBlock(t *testing.T, extra string) string { return acctest.KueueBlockAt(t, "v0.17.0", extra) }

func volcanoBlock(t *testing.T, extra string) string {
	return fmt.Sprintf(`
resource "aiplatform_volcano" "this" {
  chart       = { path = %q }
  timeout     = "3m"
  remove_crds = true
%s
}
`, volcanoChart(t), extra)
}

// conditionTrue waits until the object's status condition is True: Kueue
// sets it asynchronously after the apply. The wait is a bound for a broken
// cluster (Kueue not running), not a timing assertion.
func conditionTrue(env *testenv.Env, o acctest.Object, condition string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		deadline := time.Now().Add(2 * time.Minute)
		last := "not found"
		for {
			obj, err := o.Get(env)
			if err == nil {
				conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
				last = fmt.Sprint(conditions)
				for _, c := range conditions {
					if c, _ := c.(map[string]any); c["type"] == condition && c["status"] == "True" {
						return nil
					}
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s %s: condition %s not True (conditions: %s)", o.GVR.Resource, o.Name, condition, last)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}
