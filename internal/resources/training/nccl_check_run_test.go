package training

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// A run whose MPIJob never gets pods (the CRD is installed but no operator
// runs) fails at its timeout saying so, and deletes its MPIJob: the real API
// server accepts the rendered object, and nothing is left behind. The CRD is
// removed again, so the package's other tests see a cluster without MPIJobs.
func TestAccNCCLCheckRunTimesOut(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 (make test does)")
	}
	env := testenv.Current()
	if env == nil {
		t.Fatal("TF_ACC is set but no test cluster is running")
	}
	ctx := context.Background()
	c := kube.NewClientFromREST(env.RESTConfig, false)
	if served, err := c.Served(ctx, MPIJobKind); err != nil || served {
		t.Skipf("MPIJobs are served here (err %v): an operator may be running, so a job would not stall", err)
	}
	dir, err := testenv.ModuleDir(ctx, "github.com/kubeflow/mpi-operator", MPIOperatorVersion)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.ApplyCRDs(ctx, filepath.Join(dir, "manifests", "base")); err != nil {
		t.Fatal(err)
	}
	for { // Established comes before discovery lists the resource
		if served, err := c.Served(ctx, MPIJobKind); err == nil && served {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Cleanup(func() {
		crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
		name := MPIJobKind.Resource + "." + MPIJobKind.Group
		if err := env.Dynamic.Resource(crds).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		for {
			_, err := env.Dynamic.Resource(crds).Get(ctx, name, metav1.GetOptions{})
			served, serr := c.Served(ctx, MPIJobKind)
			if apierrors.IsNotFound(err) && serr == nil && !served {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	})

	s := testSpec()
	s.Ref = kube.Ref{Namespace: "default", Name: "stalled"}
	s.Selector, s.NodeNames, s.Tolerations = map[string]string{"testpool": "nc"}, []string{"nc-0", "nc-1"}, nil
	s.Timeout = 3 * time.Second
	out, err := run(ctx, c, s)
	if err == nil {
		t.Fatalf("a run without an operator finished: %+v", out)
	}
	for _, want := range []string{"NCCL check default/stalled did not finish within", "no pod has been created yet"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if _, found, err := c.Get(ctx, MPIJobKind, s.Ref); err != nil || found {
		t.Errorf("the MPIJob is left behind (found %v, err %v)", found, err)
	}
}
