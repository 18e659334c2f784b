package acctest

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEventuallySaysWhatItWaitedForAndSawLast(t *testing.T) {
	looks := 0
	if err := Eventually(time.Second, "three looks", func() (bool, string) { looks++; return looks == 3, "" }); err != nil || looks != 3 {
		t.Fatalf("Eventually: %v after %d looks, want nil after 3", err, looks)
	}
	err := Eventually(0, "2 Running pods", func() (bool, string) { return false, "1 pods: a Pending unscheduled" })
	if err == nil || !strings.Contains(err.Error(), "2 Running pods") || !strings.Contains(err.Error(), "last seen: 1 pods: a Pending unscheduled") {
		t.Fatalf("Eventually past its bound: %v", err)
	}
}

func TestPodsWants(t *testing.T) {
	now := metav1.Now()
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
	}
	if !RunningPods(1).OK(pods) || RunningPods(2).OK(pods) || !PodCount(2).OK(pods) || PodCount(1).OK(pods) {
		t.Error("RunningPods counts pods in phase Running, PodCount every pod")
	}
	if got, want := DescribePods(pods), "2 pods: a Running on n1 Ready=True, b Pending unscheduled deleting"; got != want {
		t.Errorf("DescribePods = %q, want %q", got, want)
	}
	if got := DescribePods(nil); got != "no pods" {
		t.Errorf("DescribePods(nil) = %q", got)
	}
}
