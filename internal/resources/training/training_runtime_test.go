package training_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

var (
	clusterRuntimes = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "clustertrainingruntimes"}
	runtimes        = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainingruntimes"}
	trainJobs       = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"}
	jobSets         = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
	workloads       = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}
)

func clusterRuntime(name string) acctest.Object {
	return acctest.Object{GVR: clusterRuntimes, Name: name}
}

// runtimeHCL is a runtime named name with the given attribute lines. Its
// pods stay Running (kwok completes Job pods otherwise).
func runtimeHCL(label, name string, attrs ...string) string {
	return fmt.Sprintf("resource \"aiplatform_training_runtime\" %q {\n  name = %q\n  %s\n}\n", label, name, strings.Join(attrs, "\n  "))
}

const keepRunning = `template = { annotations = { "` + testenv.PodCompleteDelayAnnotation + `" = "1h" } }`

// submitTrainJob creates a TrainJob naming the cluster runtime rt, with
// extra spec fields and labels; it is deleted (with its pods) at cleanup.
// A TrainJob without spec.trainer gets no PET_* variables from Trainer
// v2.3.0 (its torch plugin injects them only with a trainer section), so an
// empty one is always sent. The returned func deletes the TrainJob and waits
// until its pods and Workload are gone (also run at cleanup).
func submitTrainJob(t *testing.T, env *testenv.Env, name, rt string, labels map[string]any, trainer map[string]any) func() {
	t.Helper()
	if trainer == nil {
		trainer = map[string]any{}
	}
	spec := map[string]any{"runtimeRef": map[string]any{"name": rt}, "trainer": trainer}
	meta := map[string]any{"name": name, "namespace": ns}
	if labels != nil {
		meta["labels"] = labels
	}
	tj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": meta, "spec": spec,
	}}
	ctx := context.Background()
	if _, err := env.Dynamic.Resource(trainJobs).Namespace(ns).Create(ctx, tj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating TrainJob %s: %v", name, err)
	}
	stop := func() {
		bg := metav1.DeletePropagationForeground
		_ = env.Dynamic.Resource(trainJobs).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
		waitUntil(t, 2*time.Minute, "TrainJob "+name+"'s pods and Workload gone", func() bool {
			_, err := env.Dynamic.Resource(trainJobs).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err) && len(jobPods(t, env, name)) == 0 && workloadOf(t, env, name) == nil
		})
	}
	t.Cleanup(stop)
	return stop
}

// podsOf are the pods of a TrainJob (of its JobSet, named as the TrainJob).
func podsOf(trainJob string) acctest.Pods {
	return acctest.Pods{Namespace: ns, Selector: "jobset.sigs.k8s.io/jobset-name=" + trainJob}
}

func jobPods(t *testing.T, env *testenv.Env, trainJob string) []corev1.Pod {
	t.Helper()
	pods, err := podsOf(trainJob).List(env)
	if err != nil {
		t.Fatalf("TrainJob %s: %v", trainJob, err)
	}
	return pods
}

// awaitRunning waits until exactly n of the TrainJob's pods are Running; a
// failure shows the pods seen last and describe's account of the TrainJob.
func awaitRunning(t *testing.T, env *testenv.Env, trainJob string, n int, bound time.Duration) {
	t.Helper()
	if _, err := podsOf(trainJob).Await(env, bound, acctest.RunningPods(n)); err != nil {
		t.Fatalf("TrainJob %s: %v\n%s", trainJob, err, describe(t, env, trainJob)())
	}
}

// waitUntil polls ok (an event the controllers produce) until it holds; the
// bound only keeps a broken controller from hanging the test.
func waitUntil(t *testing.T, bound time.Duration, what string, ok func() bool, explain ...func() string) {
	t.Helper()
	if err := acctest.Eventually(bound, what, func() (bool, string) {
		if ok() {
			return true, ""
		}
		why := ""
		for _, e := range explain {
			why += "\n" + e()
		}
		return false, why
	}); err != nil {
		t.Fatal(err)
	}
}

func envOf(c corev1.Container) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		out[e.Name] = e
	}
	return out
}

func container(p corev1.Pod, name string) (corev1.Container, bool) {
	for _, c := range p.Spec.Containers {
		if c.Name == name {
			return c, true
		}
	}
	return corev1.Container{}, false
}

// A torch runtime for 2 nodes × 8 GPUs with a checkpoint store: a TrainJob
// naming it becomes a JobSet whose 2 pods run with the rank and master
// Trainer injects, the GPUs, and the checkpoint claim mounted and named in
// CHECKPOINT_DIR; import, drift (edited and deleted by hand) repaired.
func TestAccTrainingRuntimeTorch(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_training_runtime.torch"
	deleteClaims(t, env, "rt-ckpt")
	store := pvcStore("rt-ckpt", `size = "1Gi"`)
	body := store + runtimeHCL("torch", "rt-torch",
		`framework = "torch"`,
		`num_nodes = 2`,
		`image     = "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"`,
		`command   = ["torchrun", "/workspace/train.py"]`,
		`resources_per_node = { gpus = 8, cpu = "2", memory = "4Gi" }`,
		`node_selector = { testpool = "nc" }`,
		`checkpoint = { claim_name = aiplatform_checkpoint_store.s.claim_name, mount_path = aiplatform_checkpoint_store.s.mount_path }`,
		`failure_policy = { max_restarts = 3 }`,
		`env = { NCCL_DEBUG = "WARN" }`,
		`secret_env = [{ name = "HF_TOKEN", secret = "hf", key = "token" }]`,
		keepRunning,
	)
	config := acctest.Provider(env) + body
	rt := clusterRuntime("rt-torch")
	var applied time.Time
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				PreConfig:        func() { applied = time.Now() },
				Config:           config,
				ConfigPlanChecks: emptyAfter(plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate)),
				Check: resource.ComposeAggregateTestCheckFunc(
					rt.Equal(env, "torch", "metadata", "labels", "trainer.kubeflow.org/framework"),
					rt.Equal(env, "2", "spec", "mlPolicy", "numNodes"),
					rt.Equal(env, "map[]", "spec", "mlPolicy", "torch"),
					rt.Equal(env, "3", "spec", "template", "spec", "failurePolicy", "maxRestarts"),
					rt.Equal(env, "node", "spec", "template", "spec", "replicatedJobs", "0", "name"),
					rt.Equal(env, "trainer", "spec", "template", "spec", "replicatedJobs", "0", "template", "metadata", "labels", "trainer.kubeflow.org/trainjob-ancestor-step"),
					rt.Equal(env, "0", "spec", "template", "spec", "replicatedJobs", "0", "template", "spec", "backoffLimit"),
					rt.Equal(env, "Never", "spec", "template", "spec", "replicatedJobs", "0", "template", "spec", "template", "spec", "restartPolicy"),
					rt.Equal(env, "node", "spec", "template", "spec", "replicatedJobs", "0", "template", "spec", "template", "spec", "containers", "0", "name"),
					rt.Equal(env, "8", "spec", "template", "spec", "replicatedJobs", "0", "template", "spec", "template", "spec", "containers", "0", "resources", "limits", "nvidia.com/gpu"),
					resource.TestCheckResourceAttr(addr, "kind", "ClusterTrainingRuntime"),
					resource.TestCheckResourceAttr(addr, "gpus_total", "16"),
					resource.TestCheckResourceAttr(addr, "id", "rt-torch"),
					func(*terraform.State) error {
						stop := submitTrainJob(t, env, "tj-torch", "rt-torch", nil, nil)
						awaitRunning(t, env, "tj-torch", 2, 3*time.Minute)
						t.Logf("terraform apply of the runtime to the TrainJob's 2 pods Running: %s", time.Since(applied).Round(100*time.Millisecond))
						err := checkTorchPods(t, env)
						stop()
						return err
					},
				),
			},
			{Config: config, ResourceName: addr, ImportState: true, ImportStateId: "rt-torch", ImportStateVerify: true},
			{
				// Edited by hand: another image and one node more.
				PreConfig: func() {
					rt.Edit(t, env, "kubectl-edit", func(obj map[string]any) {
						_ = unstructured.SetNestedField(obj, int64(3), "spec", "mlPolicy", "numNodes")
						jobs, _, _ := unstructured.NestedSlice(obj, "spec", "template", "spec", "replicatedJobs")
						job := jobs[0].(map[string]any)
						cs, _, _ := unstructured.NestedSlice(job, "template", "spec", "template", "spec", "containers")
						cs[0].(map[string]any)["image"] = "pytorch/pytorch:edited"
						_ = unstructured.SetNestedSlice(job, cs, "template", "spec", "template", "spec", "containers")
						_ = unstructured.SetNestedSlice(obj, jobs, "spec", "template", "spec", "replicatedJobs")
					})
				},
				Config: acctest.Provider(env, "force_conflicts = true") + body,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("num_nodes"), knownvalue.Int64Exact(2)),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					rt.Equal(env, "2", "spec", "mlPolicy", "numNodes"),
					rt.Equal(env, "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime",
						"spec", "template", "spec", "replicatedJobs", "0", "template", "spec", "template", "spec", "containers", "0", "image"),
				),
			},
			{
				// Deleted by hand: planned and created again.
				PreConfig:        func() { rt.Delete(t, env) },
				Config:           config,
				ConfigPlanChecks: emptyAfter(plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate)),
				Check:            rt.Equal(env, "2", "spec", "mlPolicy", "numNodes"),
			},
		},
		CheckDestroy: func(*terraform.State) error { return rt.Gone(env)(nil) },
	})
}

func checkTorchPods(t *testing.T, env *testenv.Env) error {
	js, err := env.Dynamic.Resource(jobSets).Namespace(ns).Get(context.Background(), "tj-torch", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("TrainJob tj-torch has no JobSet: %w", err)
	}
	if mr, _, _ := unstructured.NestedInt64(js.Object, "spec", "failurePolicy", "maxRestarts"); mr != 3 {
		return fmt.Errorf("JobSet failurePolicy.maxRestarts = %d, want 3", mr)
	}
	pods := jobPods(t, env, "tj-torch")
	if len(pods) != 2 {
		return fmt.Errorf("TrainJob tj-torch has %d pods, want 2", len(pods))
	}
	ranks := map[string]bool{}
	for _, p := range pods {
		c, ok := container(p, "node")
		if !ok {
			return fmt.Errorf("pod %s has no container node", p.Name)
		}
		e := envOf(c)
		for k, want := range map[string]string{
			"PET_NNODES": "2", "PET_MASTER_ADDR": "tj-torch-node-0-0.tj-torch", "PET_MASTER_PORT": "29500",
			"CHECKPOINT_DIR": "/checkpoints", "NCCL_DEBUG": "WARN", "PET_NPROC_PER_NODE": "auto",
		} {
			if e[k].Value != want {
				return fmt.Errorf("pod %s: %s = %q, want %q", p.Name, k, e[k].Value, want)
			}
		}
		if r := e["PET_NODE_RANK"].ValueFrom; r == nil || r.FieldRef == nil || !strings.Contains(r.FieldRef.FieldPath, "job-completion-index") {
			return fmt.Errorf("pod %s: PET_NODE_RANK = %+v, want the Job completion index", p.Name, e["PET_NODE_RANK"])
		}
		if s := e["HF_TOKEN"].ValueFrom; s == nil || s.SecretKeyRef == nil || s.SecretKeyRef.Name != "hf" || s.SecretKeyRef.Key != "token" {
			return fmt.Errorf("pod %s: HF_TOKEN = %+v, want a reference to Secret hf key token", p.Name, e["HF_TOKEN"])
		}
		ranks[p.Annotations["batch.kubernetes.io/job-completion-index"]] = true
		mounted := false
		for _, m := range c.VolumeMounts {
			if m.Name == "checkpoint" && m.MountPath == "/checkpoints" {
				mounted = true
			}
		}
		claimed := false
		for _, v := range p.Spec.Volumes {
			if v.Name == "checkpoint" && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "rt-ckpt" {
				claimed = true
			}
		}
		if !mounted || !claimed {
			return fmt.Errorf("pod %s does not mount claim rt-ckpt at /checkpoints: mounts %v, volumes %v", p.Name, c.VolumeMounts, p.Spec.Volumes)
		}
		if q := c.Resources.Limits["nvidia.com/gpu"]; q.Value() != 8 {
			return fmt.Errorf("pod %s: %v GPUs, want 8", p.Name, q.String())
		}
		if p.Spec.RestartPolicy != corev1.RestartPolicyNever {
			return fmt.Errorf("pod %s: restartPolicy %s, want Never", p.Name, p.Spec.RestartPolicy)
		}
		if p.Spec.NodeSelector["testpool"] != "nc" {
			return fmt.Errorf("pod %s: node selector %v, want testpool=nc", p.Name, p.Spec.NodeSelector)
		}
	}
	if !ranks["0"] || !ranks["1"] {
		return fmt.Errorf("pods' completion indexes %v, want 0 and 1", ranks)
	}
	return nil
}

// workloadOf is Kueue's Workload of a TrainJob, nil while there is none.
func workloadOf(t *testing.T, env *testenv.Env, trainJob string) map[string]any {
	t.Helper()
	list, err := env.Dynamic.Resource(workloads).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatalf("listing Workloads: %v", err)
	}
	for _, w := range list.Items {
		for _, o := range w.GetOwnerReferences() {
			if o.Kind == "TrainJob" && o.Name == trainJob {
				return w.Object
			}
		}
	}
	return nil
}

func condition(obj map[string]any, typ string) (status, message string) {
	conds, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			msg, _ := m["message"].(string)
			return s, msg
		}
	}
	return "", ""
}

func suspended(t *testing.T, env *testenv.Env, trainJob string) bool {
	tj, err := env.Dynamic.Resource(trainJobs).Namespace(ns).Get(context.Background(), trainJob, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading TrainJob %s: %v", trainJob, err)
	}
	s, _, _ := unstructured.NestedBool(tj.Object, "spec", "suspend")
	return s
}

// Kueue admits a TrainJob's gang whole or not at all: with 16 GPUs of quota,
// a TrainJob of the runtime at 3 nodes × 8 GPUs stays suspended with no pod
// (Kueue has judged it: QuotaReserved False), one at 2 × 8 is admitted and
// gets both pods.
func TestAccTrainingRuntimeKueueGang(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_training_runtime.gang"
	config := acctest.Provider(env) + gangQueue("rt-gang", "16") + runtimeHCL("gang", "rt-gang",
		`framework = "torch"`,
		`num_nodes = 2`,
		`image     = "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"`,
		`resources_per_node = { gpus = 8 }`,
		`node_selector = { testpool = "nc" }`,
		`gang = { kueue_queue = aiplatform_local_queue.q.name }`,
		keepRunning,
	)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{{
			Config:           config,
			ConfigPlanChecks: emptyAfter(plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate)),
			Check: resource.ComposeAggregateTestCheckFunc(
				clusterRuntime("rt-gang").Equal(env, "rt-gang", "metadata", "labels", "kueue.x-k8s.io/queue-name"),
				func(*terraform.State) error {
					queue := map[string]any{"kueue.x-k8s.io/queue-name": "rt-gang"}
					stopBig := submitTrainJob(t, env, "tj-too-big", "rt-gang", queue, map[string]any{"numNodes": int64(3)})
					waitUntil(t, 2*time.Minute, "Kueue's verdict on tj-too-big", func() bool {
						w := workloadOf(t, env, "tj-too-big")
						s, _ := condition(w, "QuotaReserved")
						return w != nil && s == "False"
					}, describe(t, env, "tj-too-big"))
					_, why := condition(workloadOf(t, env, "tj-too-big"), "QuotaReserved")
					if !suspended(t, env, "tj-too-big") || len(jobPods(t, env, "tj-too-big")) != 0 {
						return fmt.Errorf("a gang of 24 GPUs over a 16-GPU quota: suspended=%v with %d pods, want suspended with 0",
							suspended(t, env, "tj-too-big"), len(jobPods(t, env, "tj-too-big")))
					}
					t.Logf("Kueue holds tj-too-big: %s", why)

					stopFits := submitTrainJob(t, env, "tj-fits", "rt-gang", queue, nil)
					waitUntil(t, 3*time.Minute, "tj-fits admitted with its pods", func() bool {
						s, _ := condition(workloadOf(t, env, "tj-fits"), "Admitted")
						return s == "True" && len(jobPods(t, env, "tj-fits")) == 2
					}, describe(t, env, "tj-fits"))
					if suspended(t, env, "tj-fits") {
						return fmt.Errorf("tj-fits is admitted but still suspended")
					}
					awaitRunning(t, env, "tj-fits", 2, 2*time.Minute)
					if !suspended(t, env, "tj-too-big") || len(jobPods(t, env, "tj-too-big")) != 0 {
						return fmt.Errorf("tj-too-big started beside tj-fits")
					}
					// Gone before the queue is destroyed (Kueue keeps a
					// ClusterQueue while it has Workloads).
					stopFits()
					stopBig()
					return nil
				},
			),
		}},
	})
}

// gangQueue is a flavor on the nc pool, a ClusterQueue with gpus of quota
// and a LocalQueue, all named name.
func gangQueue(name, gpus string) string {
	return fmt.Sprintf(`
resource "aiplatform_resource_flavor" "f" {
  name        = %[1]q
  node_labels = { testpool = "nc" }
}
resource "aiplatform_cluster_queue" "cq" {
  name = %[1]q
  resource_groups = [{
    covered_resources = ["nvidia.com/gpu"]
    flavors = [{ name = aiplatform_resource_flavor.f.name, resources = [{ name = "nvidia.com/gpu", nominal_quota = %[2]q }] }]
  }]
}
resource "aiplatform_local_queue" "q" {
  name          = %[1]q
  namespace     = %[3]q
  cluster_queue = aiplatform_cluster_queue.cq.name
}
`, name, gpus, ns)
}

// describe says where a TrainJob is: its status, its JobSet's, its
// Workload's conditions and its pods' phases.
func describe(t *testing.T, env *testenv.Env, trainJob string) func() string {
	return func() string {
		ctx := context.Background()
		var b strings.Builder
		if tj, err := env.Dynamic.Resource(trainJobs).Namespace(ns).Get(ctx, trainJob, metav1.GetOptions{}); err == nil {
			fmt.Fprintf(&b, "TrainJob spec %v\n status %v\n", tj.Object["spec"], tj.Object["status"])
		} else {
			fmt.Fprintf(&b, "TrainJob: %v\n", err)
		}
		if js, err := env.Dynamic.Resource(jobSets).Namespace(ns).Get(ctx, trainJob, metav1.GetOptions{}); err == nil {
			fmt.Fprintf(&b, "JobSet suspend=%v status %v\n", js.Object["spec"].(map[string]any)["suspend"], js.Object["status"])
		} else {
			fmt.Fprintf(&b, "JobSet: %v\n", err)
		}
		if w := workloadOf(t, env, trainJob); w != nil {
			fmt.Fprintf(&b, "Workload status %v\n", w["status"])
		}
		for _, p := range jobPods(t, env, trainJob) {
			fmt.Fprintf(&b, "pod %s %s node=%q %v\n", p.Name, p.Status.Phase, p.Spec.NodeName, p.Status.Conditions)
		}
		if evs, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
			for _, e := range evs.Items {
				if strings.HasPrefix(e.InvolvedObject.Name, trainJob) && e.Type != "Normal" {
					fmt.Fprintf(&b, "event %s %s: %s\n", e.InvolvedObject.Name, e.Reason, e.Message)
				}
			}
		}
		return b.String()
	}
}

// An MPI runtime (Trainer's MPI policy, launcher counted as a node): a
// TrainJob at 2 nodes gets an sshd node pod and, once it is Ready, the
// launcher pod, which runs the command with Trainer's OpenMPI hostfile
// (2 hosts × 4 slots) mounted and named in its environment.
func TestAccTrainingRuntimeMPI(t *testing.T) {
	env := acctest.Env(t)
	addr := "aiplatform_training_runtime.mpi"
	config := acctest.Provider(env) + runtimeHCL("mpi", "rt-mpi",
		`framework = "mpi"`,
		`num_nodes = 2`,
		`image     = "mpioperator/openmpi:0.6.0"`,
		`command   = ["mpirun", "-np", "8", "/home/mpiuser/pi"]`,
		`procs_per_node = 4`,
		`resources_per_node = { gpus = 8 }`,
		`node_selector = { testpool = "nc" }`,
		keepRunning,
	)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{
			{
				Config:           config,
				ConfigPlanChecks: emptyAfter(plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate)),
				Check: resource.ComposeAggregateTestCheckFunc(
					clusterRuntime("rt-mpi").Equal(env, "4", "spec", "mlPolicy", "mpi", "numProcPerNode"),
					clusterRuntime("rt-mpi").Equal(env, "true", "spec", "mlPolicy", "mpi", "runLauncherAsNode"),
					clusterRuntime("rt-mpi").Equal(env, "1", "spec", "mlPolicy", "numNodes"),
					clusterRuntime("rt-mpi").Equal(env, "1", "spec", "template", "spec", "replicatedJobs", "0", "template", "spec", "parallelism"),
					resource.TestCheckResourceAttr(addr, "num_nodes", "2"),
					func(*terraform.State) error {
						stop := submitTrainJob(t, env, "tj-mpi", "rt-mpi", nil, nil)
						defer stop()
						awaitRunning(t, env, "tj-mpi", 2, 3*time.Minute) // its node and launcher pods
						var launcher *corev1.Pod
						for _, p := range jobPods(t, env, "tj-mpi") {
							if p.Labels["jobset.sigs.k8s.io/replicatedjob-name"] == "launcher" {
								launcher = &p
							}
						}
						if launcher == nil {
							return fmt.Errorf("no launcher pod among %d pods", len(jobPods(t, env, "tj-mpi")))
						}
						c, _ := container(*launcher, "node")
						if strings.Join(c.Command, " ") != "mpirun -np 8 /home/mpiuser/pi" {
							return fmt.Errorf("launcher command %v", c.Command)
						}
						e := envOf(c)
						if e["OMPI_MCA_orte_default_hostfile"].Value == "" || e["OMPI_MCA_orte_set_default_slots"].Value != "4" {
							return fmt.Errorf("launcher env lacks Trainer's OpenMPI hostfile settings (4 slots): %v", c.Env)
						}
						cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), "tj-mpi-mpi-hostfile", metav1.GetOptions{})
						if err != nil {
							return fmt.Errorf("hostfile: %w", err)
						}
						for _, v := range cm.Data {
							if strings.Count(v, "slots=4") != 2 {
								return fmt.Errorf("hostfile %q, want 2 hosts with 4 slots", v)
							}
						}
						return nil
					},
				),
			},
			{Config: config, ResourceName: addr, ImportState: true, ImportStateId: "rt-mpi", ImportStateVerify: true},
		},
	})
}
