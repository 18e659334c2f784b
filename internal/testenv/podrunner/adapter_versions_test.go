package podrunner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A KubeRay image tagged with a version testenv builds runs that version;
// both are built alone in the module's directory.
func TestKubeRayVersionOf(t *testing.T) {
	for image, want := range map[string]string{
		"quay.io/kuberay/operator:" + KubeRayPreviousVersion: KubeRayPreviousVersion,
		"quay.io/kuberay/operator:" + KubeRayVersion:         KubeRayVersion,
		"kuberay/operator:nightly":                           "",
	} {
		if got := kubeRayVersionOf(image); got != want {
			t.Errorf("kubeRayVersionOf(%q) = %q, want %q", image, got, want)
		}
	}
	spec, err := KubeRay.spec(&corev1.Container{Image: "quay.io/kuberay/operator:" + KubeRayPreviousVersion})
	if err != nil || spec.Version != KubeRayPreviousVersion || spec.Dir != "" {
		t.Errorf("the previous version's spec: %+v, %v", spec, err)
	}
}

// A JobSet image tagged with a version testenv builds runs that version, the
// previous one built alone; the chart's "main" runs JobSetVersion.
func TestJobSetVersionOf(t *testing.T) {
	const repo = "us-central1-docker.pkg.dev/k8s-staging-images/jobset/jobset"
	for image, want := range map[string]string{
		repo + ":" + JobSetPreviousVersion:               JobSetPreviousVersion,
		"registry.k8s.io/jobset/jobset:" + JobSetVersion: JobSetVersion,
		repo + ":main": "",
	} {
		if got := jobSetVersionOf(image); got != want {
			t.Errorf("jobSetVersionOf(%q) = %q, want %q", image, got, want)
		}
	}
	spec, err := JobSet.spec(&corev1.Container{Image: repo + ":" + JobSetPreviousVersion})
	if err != nil || spec.Version != JobSetPreviousVersion || spec.Dir != "" || spec.Package != "." {
		t.Errorf("the previous version's spec: %+v, %v", spec, err)
	}
}
