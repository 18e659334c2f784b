// Package training_test applies the training examples with examples/rbac's
// least-privilege roles, on a cluster running JobSet, Kubeflow Trainer and
// Kueue (their charts, their pods run by the pod runner), as
// examples/training's.
package training_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

// examples/training's cluster: two 8 x H100 nodes and a CPU node; Kueue
// last (its TrainJob integration needs Trainer's CRDs when it starts).
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{APIServerArgs: acctest.AuditArgs(),
		Nodes: []testenv.NodePool{
			{Name: "h100", Count: 2, GPUs: 8, Product: "NVIDIA-H100-80GB-HBM3", GPUMemory: "81559", CPU: "64", Memory: "512Gi"},
			{Name: "system", Count: 1},
		},
		Controllers: []testenv.Controller{
			testenv.ControllerOf(podrunner.JobSet),
			testenv.ControllerOf(podrunner.Trainer),
			testenv.Kueue("batch/job", "trainer.kubeflow.org/trainjob"),
		},
	})
}

// Each example: apply, `plan -detailed-exitcode` exits 0, destroy. The
// resource examples run with only the roles of their types, in namespaces
// the platform team created beforehand (each its own: testenv's namespace
// deletion is not instant); examples/training (its installs off: the same
// charts already run here) with the aggregated role.
func TestAccTrainingWithLeastPrivilege(t *testing.T) {
	env := acctest.Env(t)
	aggregated := acctest.LeastPrivilegeKubeconfig(t, env)
	for _, c := range []struct{ example, namespace string }{
		{"resources/aiplatform_checkpoint_store", "training"},
		{"resources/aiplatform_training_runtime", "training-rt"},
	} {
		t.Run(c.example, func(t *testing.T) {
			namespace(t, env, c.namespace)
			tf := acctest.ExampleFragment(t, c.example)
			if c.namespace != "training" {
				re := strings.NewReplacer(`namespace      = "training"`, `namespace      = "`+c.namespace+`"`)
				if tf = re.Replace(tf); !strings.Contains(tf, c.namespace) {
					t.Fatalf(`%s no longer says namespace = "training": update this test`, c.example)
				}
			}
			src := acctest.FragmentWorkspace(t, tf)
			acctest.ApplyPlanDestroy(t, env, src, acctest.IdentityFor(t, env, c.example, src))
		})
	}
	t.Run("training", func(t *testing.T) {
		acctest.ApplyPlanDestroy(t, env, filepath.Join("..", "..", "training"), aggregated, "TF_VAR_install_controllers=false")
	})
}

func namespace(t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := env.Client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}
