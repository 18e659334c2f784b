package training_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

var (
	jobSets       = acctest.JobSetsGVR
	trainJobs     = acctest.TrainJobsGVR
	clusterQueues = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}
)

// jobSetRestarts is how often JobSet restarted the TrainJob's group under
// its failure policy (status.restarts of the JobSet the TrainJob became).
func jobSetRestarts(t *testing.T, env *testenv.Env, j acctest.QueuedTrainJob) int64 {
	t.Helper()
	js, err := env.Dynamic.Resource(jobSets).Namespace(j.Namespace).Get(context.Background(), j.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the JobSet of TrainJob %s: %v", j.Name, err)
	}
	n, _, _ := unstructured.NestedInt64(js.Object, "status", "restarts")
	return n
}

// condition reports whether the TrainJob has the condition with status True.
func trainJobCondition(t *testing.T, env *testenv.Env, j acctest.QueuedTrainJob, condition string) bool {
	t.Helper()
	obj, err := env.Dynamic.Resource(trainJobs).Namespace(j.Namespace).Get(context.Background(), j.Name, metav1.GetOptions{})
	return err == nil && conditionTrue(obj.Object, condition)
}

// waitFor polls ok until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("%s: not within %s", what, timeout)
}

// podUIDs are the UIDs of the pods, sorted.
func podUIDs(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, string(p.UID))
	}
	slices.Sort(out)
	return out
}

// checkMountsClaim checks that each pod's trainer container ("node") mounts
// the claim at mountPath and is told where through env.
func checkMountsClaim(t *testing.T, pods []corev1.Pod, claim, mountPath, env string) {
	t.Helper()
	for _, p := range pods {
		volume := ""
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
				volume = v.Name
			}
		}
		if volume == "" {
			t.Errorf("pod %s has no volume of claim %s: %+v", p.Name, claim, p.Spec.Volumes)
			continue
		}
		i := slices.IndexFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == "node" })
		if i < 0 {
			t.Errorf("pod %s has no container node", p.Name)
			continue
		}
		c := p.Spec.Containers[i]
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == volume && m.MountPath == mountPath }) {
			t.Errorf("pod %s: container node does not mount volume %s at %s: %+v", p.Name, volume, mountPath, c.VolumeMounts)
		}
		if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == env && e.Value == mountPath }) {
			t.Errorf("pod %s: container node has no %s=%s: %+v", p.Name, env, mountPath, c.Env)
		}
	}
}

// claimDir is where the claim's data lives: the test cluster's provisioner
// binds every claim to a hostPath volume on this machine (package nodes), the
// directory a kubelet would mount into the pods.
func claimDir(t *testing.T, env *testenv.Env, namespace, claim string) (volume, dir string) {
	t.Helper()
	ctx := context.Background()
	var pvc *corev1.PersistentVolumeClaim
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(250 * time.Millisecond) {
		var err error
		if pvc, err = env.Client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, claim, metav1.GetOptions{}); err != nil {
			t.Fatalf("claim %s: %v", claim, err)
		}
		if pvc.Status.Phase == corev1.ClaimBound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("claim %s is %s, not Bound", claim, pvc.Status.Phase)
		}
	}
	pv, err := env.Client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Spec.HostPath == nil {
		t.Fatalf("volume %s of claim %s is not a hostPath volume: this test reads the test cluster's own storage", pv.Name, claim)
	}
	return pv.Name, pv.Spec.HostPath.Path
}

// checkpoint is what a trainer writes: model, optimizer and step, then a
// "latest" pointer written last (by rename), so that a reader never follows
// it to a half-written step.
func writeCheckpoint(t *testing.T, dir string, step int) (path string, content []byte) {
	t.Helper()
	stepDir := filepath.Join(dir, fmt.Sprintf("step-%06d", step))
	if err := os.MkdirAll(stepDir, 0o755); err != nil {
		t.Fatal(err)
	}
	content, _ = json.Marshal(map[string]any{"step": step, "model": "model.pt", "optimizer": "optimizer.pt"})
	path = filepath.Join(stepDir, "state.json")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "latest.tmp")
	if err := os.WriteFile(tmp, []byte(filepath.Base(stepDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "latest")); err != nil {
		t.Fatal(err)
	}
	return path, content
}

// clusterQueuesActive waits until every ClusterQueue reports Active.
func clusterQueuesActive(t *testing.T, env *testenv.Env) {
	t.Helper()
	var inactive []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		list, err := env.Dynamic.Resource(clusterQueues).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		inactive = nil
		for _, q := range list.Items {
			if !conditionTrue(q.Object, "Active") {
				inactive = append(inactive, q.GetName())
			}
		}
		if len(inactive) == 0 && len(list.Items) > 0 {
			return
		}
	}
	t.Fatalf("ClusterQueues not Active after 30s: %v", inactive)
}

func conditionTrue(obj map[string]any, condition string) bool {
	conds, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == condition && m["status"] == "True" {
			return true
		}
	}
	return false
}
