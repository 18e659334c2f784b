package podrunner

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
)

// An image tagged with a version testenv builds runs that version (Binary
// or an Alternate, the previous default an upgrade test starts from); any
// other tag, and a digest, runs Binary. Each previous version is built where
// its requirements allow: alone in its module's directory, or in a tools
// module.
func TestVersionByImageTag(t *testing.T) {
	for _, c := range []struct {
		adapter *Adapter
		repo    string
		noV     bool   // the project's tags have no leading v
		dir     string // where the previous version is built
	}{
		{adapter: KubeRay, repo: "quay.io/kuberay/operator", dir: binaries.KubeRay15},
		{adapter: JobSet, repo: "us-central1-docker.pkg.dev/k8s-staging-images/jobset/jobset", dir: binaries.CR022},
		{adapter: LWS, repo: "registry.k8s.io/lws/lws", dir: binaries.CR022},
		{adapter: Trainer, repo: "ghcr.io/kubeflow/trainer/trainer-controller-manager", dir: binaries.K8s035},
		{adapter: MPIOperator, repo: "mpioperator/mpi-operator", noV: true, dir: binaries.K8s035},
		{adapter: KServe, repo: "kserve/kserve-controller", dir: binaries.KServe019},
	} {
		a := c.adapter
		if len(a.Alternates) == 0 {
			t.Errorf("%s: no previous version to upgrade from", a.Name)
			continue
		}
		for _, want := range a.versions() {
			tag := want.Version
			if c.noV {
				tag = strings.TrimPrefix(tag, "v")
			}
			got, err := a.spec(&corev1.Container{Image: c.repo + ":" + tag})
			if err != nil || got.Key() != want.Key() {
				t.Errorf("%s image tag %s runs %+v (%v), want %+v", a.Name, tag, got, err, want)
			}
		}
		if previous := a.Alternates[0]; previous.Dir != c.dir {
			t.Errorf("%s %s is built in %q, want %q", a.Name, previous.Version, previous.Dir, c.dir)
		}
		for _, other := range []string{":main", ":latest", "@sha256:0123", ""} {
			if v := a.versionOf(c.repo + other); v != "" {
				t.Errorf("%s image %s%s names version %s, want none", a.Name, c.repo, other, v)
			}
			if got, err := a.spec(&corev1.Container{Image: c.repo + other}); err != nil || got.Key() != a.Binary.Key() {
				t.Errorf("%s image %s%s runs %+v (%v), want Binary", a.Name, c.repo, other, got, err)
			}
		}
	}
}
