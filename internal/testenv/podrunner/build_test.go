package podrunner

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
)

// A pod's binary is built when the pod is to run, not before: while it
// builds the pod is not Ready, its container waiting with reason
// ContainerCreating and the build in its message; once built the process
// starts (Running, its binary the cached one), and a second pod of the
// same image waits for no second build.
func TestBuildOnFirstPod(t *testing.T) {
	// An empty binary cache; Go's build cache stays where it is (its
	// default is under XDG_CACHE_HOME too).
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOCACHE", strings.TrimSpace(string(gocache)))
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	sleeper := &Adapter{
		Name:    "sleeper",
		Binary:  binaries.Spec{Name: "sleeper", Version: "v1", Dir: "internal/testenv/podrunner/testdata/sleeper", Package: ".", ColdBuild: "seconds"},
		Image:   regexp.MustCompile(`^example\.test/sleeper:`),
		Prepare: func(*localPod) error { return nil },
	}
	if binaries.Built(sleeper.Binary) {
		t.Fatal("the sleeper is built before any pod ran")
	}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
			Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "main", Image: "example.test/sleeper:v1"}}},
		}
	}
	client := fake.NewClientset(pod("a"))
	client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{
			Token: "t", ExpirationTimestamp: metav1.NewTime(time.Now().Add(time.Hour))}}, nil
	})
	var mu sync.Mutex
	var statuses []corev1.ContainerStatus
	client.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetSubresource() == "status" {
			if p, ok := u.GetObject().(*corev1.Pod); ok && len(p.Status.ContainerStatuses) > 0 {
				mu.Lock()
				statuses = append(statuses, p.Status.ContainerStatuses[0])
				mu.Unlock()
			}
		}
		return false, nil, nil
	})

	r := newPodRunner(client, "https://127.0.0.1:1", nil, t.TempDir(), []*Adapter{sleeper}, nil, t.Logf)
	r.start()
	defer func() {
		// As r.stop, without waiting for the watch: the fake clientset's
		// watch does not end with the context.
		r.cancel()
		r.mu.Lock()
		pods := r.pods
		r.mu.Unlock()
		for _, lp := range pods {
			lp.stop()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	running := func(name string) int {
		t.Helper()
		for {
			for _, p := range r.processes() {
				if p.Name == "pod default/"+name {
					return p.PID
				}
			}
			select {
			case <-ctx.Done():
				t.Fatalf("pod %s: no process: %v", name, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	running("a")
	path, _ := binaries.Path(sleeper.Binary)
	if !binaries.Built(sleeper.Binary) {
		t.Errorf("pod a runs, but %s is not in the cache", path)
	}
	for _, p := range r.processes() {
		if p.Path != path {
			t.Errorf("%s runs %s, want %s", p.Name, p.Path, path)
		}
	}
	mu.Lock()
	first := statuses[0]
	mu.Unlock()
	if first.State.Waiting == nil || first.State.Waiting.Reason != "ContainerCreating" || !strings.Contains(first.State.Waiting.Message, "building sleeper v1") || first.Ready {
		t.Errorf("while building, the pod's container: %+v; want waiting, ContainerCreating, the build in its message", first)
	}

	// A second pod of the image: the binary is there, it starts at once.
	mu.Lock()
	statuses = nil
	mu.Unlock()
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod("b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running("b")
	mu.Lock()
	defer mu.Unlock()
	for _, s := range statuses {
		if s.State.Waiting != nil && s.State.Waiting.Reason == "ContainerCreating" {
			t.Errorf("pod b waited for a build: %+v", s)
		}
	}
}
