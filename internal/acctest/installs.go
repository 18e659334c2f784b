package acctest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// What install tests share: the charts they install offline and the
// machine-wide resources they wait for.

// KubeRayChart assembles the stand-in KubeRay chart in a temporary
// directory: this repository's testdata/charts/kuberay-operator (the
// operator's Deployment, RBAC and Service) plus KubeRay's own CRDs, copied
// from the ray-operator module v1.5.0 (never committed to this repository).
func KubeRayChart(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mod, err := testenv.ModuleDir(context.Background(), "github.com/ray-project/kuberay/ray-operator", "v1.5.0")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "kuberay-operator")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, "testdata", "charts", "kuberay-operator"))); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "crds"), os.DirFS(filepath.Join(mod, "config", "crd", "bases"))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// AwaitMPIOperatorPort waits until no MPI Operator runs on this machine: the
// operator serves /healthz on the fixed port :8080 of all interfaces, so
// testenv's pod runner can run one per machine, and other test packages
// (internal/resources/installs and training, the fabric and install
// examples) run theirs. The port counts as free at three looks a second
// apart, not between two runs of another test. This is a wait for a shared
// resource, not an assertion.
func AwaitMPIOperatorPort(t *testing.T) {
	t.Helper()
	const bound = 15 * time.Minute
	deadline := time.Now().Add(bound)
	free, logged := 0, false
	for free < 3 {
		l, err := net.Listen("tcp", ":8080")
		if err == nil {
			_ = l.Close()
			free++
		} else {
			free = 0
			if time.Now().After(deadline) {
				t.Fatalf("waited %s for port :8080 (the MPI Operator's fixed health port) to be free; last seen: %v", bound, err)
			}
			if !logged {
				t.Logf("waiting for port :8080, taken by another MPI Operator on this machine: %v", err)
				logged = true
			}
		}
		if free < 3 {
			time.Sleep(time.Second)
		}
	}
}
