package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// The cluster a user gets from `make cluster-up`, started as the README
// says (`go run ./internal/testenv/cmd/testenv up --pod-runner`, its own
// TESTENV_DIR), after `up` has exited:
//
//   - a claim of the default StorageClass binds (the agent runs the
//     provisioner) and a pod mounting it runs;
//   - an NCCL check's launcher (the nccl-tests image, container launcher,
//     its mpirun no program here) plays the log in TESTENV_DIR: the pod
//     Succeeds and its log, read through the API server, is that log;
//   - Kueue's chart, installed as aiplatform_kueue does, gets its manager
//     from the pod runner (built if it is not yet), and examples/quickstart
//     applies with the real terraform, its ClusterQueue Active, the plan
//     then empty;
//   - `testenv down` leaves no process: neither those of pids nor the
//     agent's pod processes.
func TestAccClusterUpAsTheREADMESays(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("set TF_ACC to start a detached cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	repo, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	testenvCmd := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "go", append([]string{"run", "./internal/testenv/cmd/testenv"}, args...)...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "TESTENV_DIR="+dir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	if out, err := testenvCmd("up", "--pod-runner", "--nodes", "2"); err != nil {
		t.Fatalf("testenv up --pod-runner: %v\n%s", err, out)
	}
	procs, err := testenv.ReadPIDs(dir)
	if err != nil || len(procs) == 0 {
		t.Fatalf("pids after up: %v, %v", procs, err)
	}
	var podPIDs []int
	stopped := false
	t.Cleanup(func() {
		if !stopped { // a failed test still leaves nothing running
			_, _ = testenvCmd("down")
			testenv.StopProcesses(procs)
		}
	})
	agent := false
	for _, p := range procs {
		agent = agent || p.Name == string(testenv.Agent)
		if !p.Alive() {
			t.Errorf("%s (pid %d) is not running after up exited", p.Name, p.PID)
		}
	}
	if !agent {
		t.Fatalf("no %s among %v", testenv.Agent, procs)
	}

	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	wait := func(t *testing.T, what string, done func() bool) {
		t.Helper()
		for !done() {
			select {
			case <-ctx.Done():
				t.Fatalf("%s: %v\n%s", what, ctx.Err(), tail(filepath.Join(dir, string(testenv.Agent)+".log")))
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	everywhere := []corev1.Toleration{{Operator: corev1.TolerationOpExists}}

	t.Run("a claim binds and a pod mounting it runs", func(t *testing.T) {
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "checkpoints", Namespace: "default"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
			},
		}
		if _, err := client.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: "default"},
			Spec: corev1.PodSpec{
				Tolerations: everywhere,
				Containers:  []corev1.Container{{Name: "train", Image: "busybox", VolumeMounts: []corev1.VolumeMount{{Name: "ckpt", MountPath: "/ckpt"}}}},
				Volumes: []corev1.Volume{{Name: "ckpt", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "checkpoints"}}}},
			},
		}
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		wait(t, "the claim Bound", func() bool {
			c, err := client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "checkpoints", metav1.GetOptions{})
			return err == nil && c.Status.Phase == corev1.ClaimBound
		})
		wait(t, "the pod mounting it Running", func() bool {
			p, err := client.CoreV1().Pods("default").Get(ctx, "trainer", metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != ""
		})
	})

	t.Run("an NCCL check's launcher plays the cluster's nccl-tests log", func(t *testing.T) {
		sample, err := os.ReadFile(filepath.Join(repo, "examples", "fabric-check", "logs", "good-2x8-h100-8x400g.log"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ncclLogFile), sample, 0o644); err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "h100-fabric-launcher", Namespace: "default"},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Tolerations:   everywhere,
				Containers: []corev1.Container{{Name: "launcher", Image: "ghcr.io/coreweave/nccl-tests:12.8.1-devel-ubuntu22.04-nccl2.26.2-1-0708d2e",
					Command: []string{"mpirun", "--allow-run-as-root", "-np", "16", "all_reduce_perf", "-b", "1M", "-e", "16G", "-f", "2"}}},
			},
		}
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var phase corev1.PodPhase
		wait(t, "the launcher finished", func() bool {
			p, err := client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
			if err == nil {
				phase = p.Status.Phase
			}
			return phase == corev1.PodSucceeded || phase == corev1.PodFailed
		})
		if phase != corev1.PodSucceeded {
			t.Fatalf("the launcher %s", phase)
		}
		log, err := client.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{Container: "launcher"}).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(log, sample) {
			t.Errorf("the launcher's log (%d bytes) is not the sample (%d bytes):\n%s", len(log), len(sample), log)
		}
	})

	t.Run("Kueue's chart runs on demand and examples/quickstart applies", func(t *testing.T) {
		mod, err := testenv.ModuleDir(ctx, "sigs.k8s.io/kueue", testenv.KueueVersion)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := helm.LoadChart(helm.Source{Path: filepath.Join(mod, "charts", "kueue")})
		if err != nil {
			t.Fatal(err)
		}
		rel := &helm.Release{Client: kube.NewClientFromREST(cfg, false), Namespace: testenv.KueueNamespace, Name: "kueue", Log: func(m string) { t.Log(m) }}
		// The bound covers a cold build of the manager (~10 min alone).
		if _, err := rel.Install(ctx, helm.Options{Chart: ch, Timeout: 30 * time.Minute}); err != nil {
			t.Fatalf("installing Kueue's chart: %v\n%s", err, tail(filepath.Join(dir, string(testenv.Agent)+".log")))
		}
		pods, err := client.CoreV1().Pods(testenv.KueueNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			for _, cs := range p.Status.ContainerStatuses {
				if id, ok := strings.CutPrefix(cs.ContainerID, "testenv://"); ok {
					pid, _ := strconv.Atoi(id)
					podPIDs = append(podPIDs, pid)
				}
			}
		}
		if len(podPIDs) == 0 {
			t.Fatalf("no Kueue pod reports a process of the pod runner: %+v", pods.Items)
		}

		w := acctest.NewWorkspace(t, &testenv.Env{Kubeconfig: kubeconfig}, filepath.Join(repo, "examples", "quickstart"))
		if _, err := w.Run("apply", "-auto-approve"); err != nil {
			t.Fatal(err)
		}
		if code, out := w.PlanExitCode(); code != 0 {
			t.Errorf("plan -detailed-exitcode after apply: %d\n%s", code, out)
		}
		cqs := schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}
		list, err := dyn.Resource(cqs).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) == 0 {
			t.Fatalf("ClusterQueues after the apply: %v, %v", list, err)
		}
		for _, cq := range list.Items {
			wait(t, "ClusterQueue "+cq.GetName()+" Active (judged by the Kueue manager)", func() bool {
				obj, err := dyn.Resource(cqs).Get(ctx, cq.GetName(), metav1.GetOptions{})
				if err != nil {
					return false
				}
				conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
				for _, c := range conditions {
					if c, _ := c.(map[string]any); c["type"] == "Active" && c["status"] == "True" {
						return true
					}
				}
				return false
			})
		}
	})

	t.Run("testenv down leaves no process", func(t *testing.T) {
		// The workspace's destroy runs at the end of the previous subtest.
		if out, err := testenvCmd("down"); err != nil {
			t.Fatalf("testenv down: %v\n%s", err, out)
		}
		stopped = true
		for _, p := range procs {
			if p.Alive() {
				t.Errorf("%s (pid %d) still running after down", p.Name, p.PID)
			}
		}
		for _, pid := range podPIDs {
			if alive(pid) {
				t.Errorf("the pod runner's process %d still running after down", pid)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, testenv.PIDFile)); !os.IsNotExist(err) {
			t.Errorf("%s after down: %v", testenv.PIDFile, err)
		}
	})
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] != 'Z'
}

// tail is the end of a log file, for a failure message.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
