package podrunner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
)

// A Kueue pod runs the manager its image tag names: the chart's staging tag
// or a release tag, of either version testenv builds (the runner builds it
// when the pod is to run), and one that names no version runs the default
// manager.
func TestKueueBinaryByImage(t *testing.T) {
	var specs []binaries.Spec
	for _, v := range KueueVersions {
		specs = append(specs, kueueSpec(v))
	}
	if got := Specs(); !containsAll(got, specs) {
		t.Errorf("Specs() = %v, want every Kueue version among them", got)
	}
	image := func(img string) *corev1.Container { return &corev1.Container{Name: "manager", Image: img} }
	for img, want := range map[string]string{
		"us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue:release-0.19": "v0.19.2",
		"registry.k8s.io/kueue/kueue:v0.19.2":                                    "v0.19.2",
		"us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue:release-0.17": "v0.17.0",
		"registry.k8s.io/kueue/kueue:v0.17.0":                                    "v0.17.0",
		"registry.k8s.io/kueue/kueue:latest":                                     KueueVersion,
	} {
		got, err := Kueue.spec(image(img))
		if err != nil || got.Key() != kueueSpec(want).Key() {
			t.Errorf("%s: %q, %v; want %q", img, got.Key(), err, kueueSpec(want).Key())
		}
	}
	a, err := KueueAt("v0.19.2")
	if err != nil || a.Binary.Version != "v0.19.2" || a.Install.Chart.Version != "v0.19.2" || Kueue.Binary.Version != KueueVersion {
		t.Errorf("KueueAt(v0.19.2) = %+v, %v (and the default adapter is now %s)", a, err, Kueue.Binary.Version)
	}
	if _, err := KueueAt("v0.18.0"); err == nil {
		t.Error("KueueAt(v0.18.0): no error")
	}
}

func containsAll(got, want []binaries.Spec) bool {
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g.Key() == w.Key()
		}
		if !found {
			return false
		}
	}
	return true
}
