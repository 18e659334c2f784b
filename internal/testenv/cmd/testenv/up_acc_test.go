package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

var (
	clusterQueues           = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}
	trainJobs               = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"}
	clusterTrainingRuntimes = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "clustertrainingruntimes"}
	inferenceServices       = schema.GroupVersionResource{Group: "serving.kserve.io", Version: "v1beta1", Resource: "inferenceservices"}
)

// The cluster a user gets from `make cluster-up`, started as the README
// says (`go run ./internal/testenv/cmd/testenv up --pod-runner`, its own
// TESTENV_DIR, three 8-GPU nodes), after `up` has exited; then the examples
// applied to it with the real terraform as the README, the training guide
// and examples/fabric-check/README.md tell a user to (the charts and the MPI
// Operator's manifest from the Go module cache: this machine is offline):
//
//   - examples/training installs Kueue, JobSet and Kubeflow Trainer (their
//     controllers run by the agent's pod runner, each built if it is not
//     yet); its checkpoint store's claim binds (the agent runs the
//     provisioner), and the TrainJob of its `trainjob` output, submitted
//     as a data scientist does, gets pods that mount the claim and run;
//   - examples/quickstart applies on top, its ClusterQueue Active (judged
//     by the Kueue manager), the plan then empty;
//   - examples/fabric-check with the bad sample log at
//     $TESTENV_DIR/nccl-tests.txt: the NCCL check's launcher plays it, the
//     apply fails with verdict bad and the ordered checklist (GPUDirect RDMA
//     marked), and the runtime it gates is not created; with the good
//     sample copied there the same apply passes, verdict good;
//   - examples/serving-kserve installs KServe; KServe's manager reconciles
//     an InferenceService: its predictor Deployment, owned by it and made
//     from the example's runtime, and PredictorReady True once that is
//     Available;
//   - every workspace destroys; `testenv down` leaves no process: neither
//     those of pids nor the agent's pod processes.
func TestAccClusterUpAsTheREADMESays(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("set TF_ACC to start a detached cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute) // within make test's 60m
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
	started := time.Now()
	if out, err := testenvCmd("up", "--pod-runner"); err != nil { // make cluster-up
		t.Fatalf("testenv up --pod-runner: %v\n%s", err, out)
	}
	t.Logf("TIMING: testenv up --pod-runner returned after %s", time.Since(started).Round(100*time.Millisecond))
	procs, err := testenv.ReadPIDs(dir)
	if err != nil || len(procs) == 0 {
		t.Fatalf("pids after up: %v, %v", procs, err)
	}
	podPIDs := map[int]string{}
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
	env := &testenv.Env{Kubeconfig: kubeconfig, RESTConfig: cfg, Client: client, Dynamic: dyn}
	agentLog := func() string { return tail(filepath.Join(dir, string(testenv.Agent)+".log")) }
	wait := func(t *testing.T, what string, done func() bool) {
		t.Helper()
		for !done() {
			select {
			case <-ctx.Done():
				t.Fatalf("%s: %v\n%s", what, ctx.Err(), agentLog())
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	// runnerPIDs records the processes the pod runner runs for the
	// cluster's pods now (container IDs testenv://<pid>), for the last
	// subtest to find stopped.
	runnerPIDs := func(t *testing.T) int {
		t.Helper()
		pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range pods.Items {
			for _, cs := range p.Status.ContainerStatuses {
				if id, ok := strings.CutPrefix(cs.ContainerID, "testenv://"); ok {
					pid, _ := strconv.Atoi(id)
					podPIDs[pid] = p.Namespace + "/" + p.Name
					n++
				}
			}
		}
		return n
	}
	chart := func(t *testing.T, module, version, sub string) string {
		t.Helper()
		mod, err := testenv.ModuleDir(ctx, module, version)
		if err != nil {
			t.Fatal(err)
		}
		return filepath.Join(mod, filepath.FromSlash(sub))
	}
	example := func(name string) string { return filepath.Join(repo, "examples", name) }

	t.Run("examples/training on make cluster-up", func(t *testing.T) {
		w := acctest.NewWorkspace(t, env, example("training"))
		w.Env = append(w.Env,
			"TF_VAR_kueue_chart_path="+chart(t, "sigs.k8s.io/kueue", testenv.KueueVersion, "charts/kueue"),
			"TF_VAR_jobset_chart_path="+chart(t, "sigs.k8s.io/jobset", "v0.12.0", "charts/jobset"),
			"TF_VAR_trainer_chart_path="+chart(t, "github.com/kubeflow/trainer/v2", "v2.3.0", "charts/kubeflow-trainer"))
		applied := time.Now()
		if _, err := w.Run("apply", "-auto-approve"); err != nil {
			t.Fatalf("%v\n%s", err, agentLog())
		}
		t.Logf("TIMING: examples/training applied (Kueue, JobSet, Trainer installed) in %s", time.Since(applied).Round(100*time.Millisecond))
		if code, out := w.PlanExitCode(); code != 0 {
			t.Fatalf("plan -detailed-exitcode after apply: %d\n%s", code, out)
		}
		if runnerPIDs(t) == 0 {
			t.Fatalf("no pod reports a process of the pod runner after the installs\n%s", agentLog())
		}

		t.Run("the checkpoint store's claim binds and the TrainJob's pods mounting it run", func(t *testing.T) {
			outs := w.Outputs()
			claim, _ := outs["checkpoint_claim"].(string)
			if claim == "" {
				t.Fatalf("checkpoint_claim output %v", outs["checkpoint_claim"])
			}
			wait(t, "claim default/"+claim+" Bound", func() bool {
				c, err := client.CoreV1().PersistentVolumeClaims("default").Get(ctx, claim, metav1.GetOptions{})
				return err == nil && c.Status.Phase == corev1.ClaimBound
			})
			// The `trainjob` output is what a data scientist submits.
			text, _ := outs["trainjob"].(string)
			job := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(text), &job.Object); err != nil {
				t.Fatalf("the trainjob output: %v\n%s", err, text)
			}
			if _, err := dyn.Resource(trainJobs).Namespace("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			defer func() { // the fabric check needs the GPUs
				policy := metav1.DeletePropagationForeground
				if err := dyn.Resource(trainJobs).Namespace("default").Delete(ctx, job.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
					t.Error(err)
				}
				wait(t, "the TrainJob's pods gone", func() bool {
					pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=" + job.GetName()})
					return err == nil && len(pods.Items) == 0
				})
			}()
			// kwok completes a Job's pod as soon as it runs, so a pod
			// that ran is Running or Succeeded, on a node.
			ran := map[string]bool{}
			wait(t, "2 pods of TrainJob "+job.GetName()+" mounting "+claim+" ran", func() bool {
				pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=" + job.GetName()})
				if err != nil {
					return false
				}
				for _, p := range pods.Items {
					mounts := false
					for _, v := range p.Spec.Volumes {
						mounts = mounts || (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim)
					}
					if !mounts {
						t.Fatalf("pod %s mounts no claim %s: %v", p.Name, claim, p.Spec.Volumes)
					}
					if p.Spec.NodeName != "" && (p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded) {
						ran[p.Name] = true
					}
				}
				return len(ran) >= 2
			})
		})

		t.Run("examples/quickstart: its ClusterQueue Active", func(t *testing.T) {
			q := acctest.NewWorkspace(t, env, example("quickstart"))
			if _, err := q.Run("apply", "-auto-approve"); err != nil {
				t.Fatal(err)
			}
			if code, out := q.PlanExitCode(); code != 0 {
				t.Errorf("plan -detailed-exitcode after apply: %d\n%s", code, out)
			}
			wait(t, "ClusterQueue cluster-queue Active (judged by the Kueue manager)", func() bool {
				obj, err := dyn.Resource(clusterQueues).Get(ctx, "cluster-queue", metav1.GetOptions{})
				return err == nil && condition(obj, "Active") == "True"
			})
		})

		t.Run("examples/fabric-check: a bad log fails the apply with the checklist, a good one passes", func(t *testing.T) {
			ncclLog := filepath.Join(dir, ncclLogFile) // $TESTENV_DIR/nccl-tests.txt, as its README says
			use := func(sample string) {
				b, err := os.ReadFile(filepath.Join(example("fabric-check"), "logs", sample))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(ncclLog, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			f := acctest.NewWorkspace(t, env, example("fabric-check"))
			f.Env = append(f.Env, "TF_VAR_mpi_operator_manifest_path="+chart(t, "github.com/kubeflow/mpi-operator", "v0.8.2", "deploy/v2beta1/mpi-operator.yaml"))

			use("bad-2x8-h100-8x400g-no-gdr.log")
			out, err := f.Run("apply", "-auto-approve")
			if err == nil {
				t.Fatalf("the apply with the bad log succeeded:\n%s", out)
			}
			checklist := []string{"NCCL check default/h100-fabric failed",
				"verdict: bad — busbw 261.29 GB/s at the largest size (16 GiB, the table's last row) is 65.3% of the 400.00 GB/s peak",
				"checklist, in this order", "1. NCCL_SOCKET_IFNAME", "2. NCCL_IB_HCA", "3. MTU and GID index",
				"4. The pods resolve and reach each other", "5. hostNetwork: true for RoCE"}
			for i := range checklist {
				checklist[i] = regexp.QuoteMeta(checklist[i])
			}
			// The log's evidence: its channels go via NET/IB without GDRDMA.
			checklist = append(checklist, regexp.QuoteMeta("* 6. GPUDirect RDMA"), regexp.QuoteMeta(`"via NET/…" channel lines, none via GDRDMA`))
			if !regexp.MustCompile(strings.Join(checklist, ".*")).MatchString(flat(out)) {
				t.Errorf("the failed apply does not say, in this order, %q:\n%s\n%s", checklist, out, agentLog())
			}
			if _, err := dyn.Resource(clusterTrainingRuntimes).Get(ctx, "torch-h100-checked", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("after the failed check the runtime exists or cannot be read (%v): want it not created", err)
			}

			use("good-2x8-h100-8x400g.log")
			if _, err := f.Run("apply", "-auto-approve"); err != nil {
				t.Fatalf("the apply with the good log: %v\n%s", err, agentLog())
			}
			fabric, _ := f.Outputs()["fabric"].(map[string]any)
			if fabric["verdict"] != "good" || fabric["busbw_gbps"] != 373.56 || fabric["peak_gbps"] != float64(400) || fabric["transport"] != "IB" {
				t.Errorf("fabric output %v: want verdict good, busbw 373.56 (the largest size's) of a 400 GB/s peak, over IB", fabric)
			}
			if _, err := dyn.Resource(clusterTrainingRuntimes).Get(ctx, "torch-h100-checked", metav1.GetOptions{}); err != nil {
				t.Errorf("the runtime after a good check: %v", err)
			}
			if code, out := f.PlanExitCode(); code != 0 {
				t.Errorf("plan -detailed-exitcode after apply: %d\n%s", code, out)
			}
		})
	})

	t.Run("examples/serving-kserve: KServe's manager reconciles an InferenceService", func(t *testing.T) {
		w := acctest.NewWorkspace(t, env, example("serving-kserve"))
		w.Env = append(w.Env, "TF_VAR_kserve_chart_path="+chart(t, "github.com/kserve/kserve", "v0.20.0", "charts/kserve-resources"))
		applied := time.Now()
		if _, err := w.Run("apply", "-auto-approve"); err != nil {
			t.Fatalf("%v\n%s", err, agentLog())
		}
		t.Logf("TIMING: examples/serving-kserve applied (KServe installed) in %s", time.Since(applied).Round(100*time.Millisecond))
		if code, out := w.PlanExitCode(); code != 0 {
			t.Fatalf("plan -detailed-exitcode after apply: %d\n%s", code, out)
		}
		if runnerPIDs(t) == 0 {
			t.Fatalf("no pod reports a process of the pod runner after KServe's install\n%s", agentLog())
		}
		isvc := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
			"metadata": map[string]any{"name": "chat", "namespace": "default"},
			"spec":     map[string]any{"predictor": map[string]any{"model": map[string]any{"modelFormat": map[string]any{"name": "vLLM"}}}},
		}}
		if _, err := dyn.Resource(inferenceServices).Namespace("default").Create(ctx, isvc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%v\n%s", err, agentLog())
		}
		defer func() { // before the workspace's destroy uninstalls KServe
			if err := dyn.Resource(inferenceServices).Namespace("default").Delete(ctx, "chat", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
			wait(t, "InferenceService chat gone", func() bool {
				_, err := dyn.Resource(inferenceServices).Namespace("default").Get(ctx, "chat", metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			})
		}()
		wait(t, "Deployment chat-predictor made by KServe", func() bool {
			_, err := client.AppsV1().Deployments("default").Get(ctx, "chat-predictor", metav1.GetOptions{})
			return err == nil
		})
		d, err := client.AppsV1().Deployments("default").Get(ctx, "chat-predictor", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if owner := metav1.GetControllerOf(d); owner == nil || owner.Kind != "InferenceService" || owner.Name != "chat" {
			t.Errorf("Deployment chat-predictor's controller %v, want InferenceService chat", owner)
		}
		if c := d.Spec.Template.Spec.Containers[0]; c.Image != "vllm/vllm-openai:v0.9.0" || !strings.Contains(strings.Join(c.Args, " "), "--served-model-name chat") {
			t.Errorf("predictor container %s %q: not the example's runtime", c.Image, c.Args)
		}
		// KServe judges its predictor: the Deployment's pod (kwok's) Ready,
		// the Deployment Available, PredictorReady True.
		var conditions any
		wait(t, "InferenceService chat PredictorReady (judged by KServe's manager)", func() bool {
			obj, err := dyn.Resource(inferenceServices).Namespace("default").Get(ctx, "chat", metav1.GetOptions{})
			if err != nil {
				return false
			}
			conditions = obj.Object["status"]
			return condition(obj, "PredictorReady") == "True"
		})
		t.Logf("InferenceService chat's status: %v", conditions)
	})

	t.Run("testenv down leaves no process", func(t *testing.T) {
		// Each workspace's destroy ran at the end of its subtest.
		if out, err := testenvCmd("down"); err != nil {
			t.Fatalf("testenv down: %v\n%s", err, out)
		}
		stopped = true
		for _, p := range procs {
			if p.Alive() {
				t.Errorf("%s (pid %d) still running after down", p.Name, p.PID)
			}
		}
		for pid, pod := range podPIDs {
			if alive(pid) {
				t.Errorf("the pod runner's process %d (pod %s) still running after down", pid, pod)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, testenv.PIDFile)); !os.IsNotExist(err) {
			t.Errorf("%s after down: %v", testenv.PIDFile, err)
		}
	})
}

// flat is terraform's output without its box drawing and line wrapping.
func flat(out string) string {
	out = strings.NewReplacer("│", " ", "╷", " ", "╵", " ").Replace(out)
	return strings.Join(strings.Fields(out), " ")
}

// condition is the status of obj's condition of that type, "" if none.
func condition(obj *unstructured.Unstructured, typ string) string {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		if c, _ := c.(map[string]any); c["type"] == typ {
			s, _ := c["status"].(string)
			return s
		}
	}
	return ""
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
