package podrunner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// An LWS image tagged with a version testenv builds runs that version; the
// chart's "main" (and any other tag or a digest) runs LWSVersion.
func TestLWSVersionOf(t *testing.T) {
	for image, want := range map[string]string{
		"registry.k8s.io/lws/lws:" + LWSPreviousVersion: LWSPreviousVersion,
		"registry.k8s.io/lws/lws:" + LWSVersion:         LWSVersion,
		"registry.k8s.io/lws/lws:main":                  "",
		"registry.k8s.io/lws/lws@sha256:0123":           "",
		"localhost:5000/lws/lws":                        "",
	} {
		if got := lwsVersionOf(image); got != want {
			t.Errorf("lwsVersionOf(%q) = %q, want %q", image, got, want)
		}
	}
	spec, err := LWS.spec(&corev1.Container{Image: "registry.k8s.io/lws/lws:" + LWSPreviousVersion})
	if err != nil || spec.Version != LWSPreviousVersion || spec.Dir != "" {
		t.Errorf("the previous version's spec: %+v, %v", spec, err)
	}
}
