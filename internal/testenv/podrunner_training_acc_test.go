package testenv_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

var (
	jobSets                 = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
	trainJobs               = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"}
	clusterTrainingRuntimes = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "clustertrainingruntimes"}
	mpiJobs                 = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}
)

// TestPodRunnerTrainingControllers runs the training stack from the module
// cache, unchanged, in one cluster through Options.Controllers: JobSet's
// chart, Kubeflow Trainer's chart (without its JobSet dependency, whose OCI
// registry is unreachable offline: JobSet is the release before it), first
// without and then with its default runtimes (an upgrade here), and the MPI
// Operator's plain manifests (server-side apply). The charts' and manifests'
// controller pods
// are run by the real controllers, webhooks served through the egress proxy,
// and they judge the objects: a JobSet gets its Jobs and pods; a TrainJob
// naming a ClusterTrainingRuntime becomes a JobSet whose pods carry the
// torch rank and master environment Trainer injects; an MPIJob gets its
// launcher and workers.
func TestPodRunnerTrainingControllers(t *testing.T) {
	if os.Getenv("TF_ACC") == "" && os.Getenv("TESTENV_E2E") == "" {
		t.Skip("set TF_ACC or TESTENV_E2E to start a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	start := time.Now()
	env, err := testenv.Start(ctx, testenv.Options{
		Nodes:       []testenv.NodePool{{Name: "cpu", Count: 3}},
		Controllers: []testenv.Controller{testenv.ControllerOf(podrunner.JobSet), testenv.ControllerOf(podrunner.Trainer), testenv.ControllerOf(podrunner.MPIOperator)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster with JobSet, Trainer and the MPI Operator ready in %s", time.Since(start).Round(time.Second))
	stopped := false
	defer func() {
		if !stopped {
			_ = env.Stop()
		}
	}()
	client := kube.NewClientFromREST(env.RESTConfig, false)
	var pids []int

	t.Run("JobSet chart", func(t *testing.T) {
		pod := readyPod(ctx, t, env, "jobset-system", "app.kubernetes.io/name=jobset,app.kubernetes.io/component=controller")
		pids = append(pids, runs(t, env, pod, testenv.JobSetController, "--zap-log-level=2"))

		js := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
			"metadata": map[string]any{"name": "gang", "namespace": "default"},
			"spec": map[string]any{
				"replicatedJobs": []any{
					replicatedJob("leader", 1, 1),
					replicatedJob("workers", 2, 2),
				},
			},
		}}
		created := createEventually(ctx, t, env, jobSets, "default", js)
		if dns, _, _ := unstructured.NestedBool(created.Object, "spec", "network", "enableDNSHostnames"); !dns {
			t.Errorf("JobSet's mutating webhook did not default spec.network.enableDNSHostnames to true: %v", created.Object["spec"])
		}
		waitFor(t, 2*time.Minute, "3 Jobs and 5 pods of JobSet gang", func() bool {
			jobs, err := env.Client.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=gang"})
			if err != nil {
				return false
			}
			pods, err := env.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=gang"})
			return err == nil && len(jobs.Items) == 3 && len(pods.Items) == 5
		})
		// kwok completes Job pods: JobSet follows its Jobs to Completed.
		waitFor(t, 2*time.Minute, "JobSet gang Completed", func() bool {
			return hasCondition(ctx, env, jobSets, "default", "gang", "Completed")
		})

		t.Run("the validating webhook denies a success policy naming no replicated job", func(t *testing.T) {
			bad := js.DeepCopy()
			bad.SetName("bad")
			_ = unstructured.SetNestedField(bad.Object, map[string]any{"operator": "All", "targetReplicatedJobs": []any{"nope"}}, "spec", "successPolicy")
			_, err := env.Dynamic.Resource(jobSets).Namespace("default").Create(ctx, bad, metav1.CreateOptions{})
			if err == nil || !strings.Contains(err.Error(), "denied") || !strings.Contains(err.Error(), "nope") {
				t.Errorf("creating a JobSet whose success policy names replicated job nope: %v, want a denial by JobSet's webhook", err)
			}
		})
	})

	t.Run("Trainer chart", func(t *testing.T) {
		mod, err := testenv.ModuleDir(ctx, podrunner.TrainerModule, podrunner.TrainerVersion)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := helm.LoadChart(helm.Source{Path: filepath.Join(mod, "charts", "kubeflow-trainer")})
		if err != nil {
			t.Fatal(err)
		}
		rel := &helm.Release{Client: client, Namespace: podrunner.Trainer.Install.Namespace, Name: podrunner.Trainer.Install.Release, Log: func(m string) { t.Log(m) }}
		pod := readyPod(ctx, t, env, "kubeflow-system", "app.kubernetes.io/name=kubeflow-trainer,app.kubernetes.io/component=manager")
		pids = append(pids, runs(t, env, pod, testenv.TrainerManager, "--config="))

		t.Run("without default runtimes: a TrainJob on a runtime of our own", func(t *testing.T) {
			list, err := env.Dynamic.Resource(clusterTrainingRuntimes).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != 0 {
				t.Errorf("runtimes.defaultEnabled=false, yet ClusterTrainingRuntimes exist: %d", len(list.Items))
			}
			runtime := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
				"metadata": map[string]any{"name": "testenv-torch", "labels": map[string]any{"trainer.kubeflow.org/framework": "torch"}},
				"spec": map[string]any{
					"mlPolicy": map[string]any{"numNodes": int64(1), "torch": map[string]any{}},
					"template": map[string]any{"spec": map[string]any{"replicatedJobs": []any{map[string]any{
						"name": "node",
						"template": map[string]any{
							"metadata": map[string]any{"labels": map[string]any{"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
							"spec": map[string]any{"template": map[string]any{
								// Pods stay Running (kwok completes Job pods otherwise).
								"metadata": map[string]any{"annotations": map[string]any{testenv.PodCompleteDelayAnnotation: "1h"}},
								"spec": map[string]any{"containers": []any{map[string]any{
									"name": "node", "image": "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime",
								}}},
							}},
						},
					}}}},
				},
			}}
			createEventually(ctx, t, env, clusterTrainingRuntimes, "", runtime)
			createEventually(ctx, t, env, trainJobs, "default", trainJob("own", "testenv-torch", 3))
			pods := torchPods(ctx, t, env, "own", 3)
			for _, p := range pods {
				if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
					t.Errorf("pod %s is %s", p.Name, p.Status.Phase)
				}
			}
			waitFor(t, 2*time.Minute, "3 Running pods of TrainJob own", func() bool {
				list, err := env.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=own"})
				running := 0
				for _, p := range list.Items {
					if p.Status.Phase == corev1.PodRunning {
						running++
					}
				}
				return err == nil && running == 3
			})

			t.Run("the webhook denies a TrainJob that sets a reserved torch variable", func(t *testing.T) {
				bad := trainJob("bad", "testenv-torch", 2)
				_ = unstructured.SetNestedSlice(bad.Object, []any{map[string]any{"name": "PET_NNODES", "value": "9"}}, "spec", "trainer", "env")
				_, err := env.Dynamic.Resource(trainJobs).Namespace("default").Create(ctx, bad, metav1.CreateOptions{})
				if err == nil || !strings.Contains(err.Error(), "denied") || !strings.Contains(err.Error(), "reserved envs") {
					t.Errorf("creating a TrainJob with env PET_NNODES: %v, want a denial by Trainer's webhook", err)
				}
			})
		})

		t.Run("with default runtimes", func(t *testing.T) {
			values := maps.Clone(podrunner.Trainer.Install.Values)
			values["runtimes"] = map[string]any{"defaultEnabled": true}
			if _, err := rel.Upgrade(ctx, helm.Options{Chart: ch, Values: values, Timeout: 5 * time.Minute}); err != nil {
				t.Fatalf("upgrading the chart: %v\n%s", err, logs(env))
			}
			// The chart does not template the runtimes: a post-install/upgrade
			// hook Job (alpine, `apk add kubectl`, `kubectl apply
			// --server-side` of this ConfigMap) does. kwok only pretends to
			// run that Job; apply its manifest as the Job would.
			cm, err := env.Client.CoreV1().ConfigMaps("kubeflow-system").Get(ctx, "kubeflow-trainer-runtimes-installer", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			objs := yamlObjects(t, []byte(cm.Data["runtimes.yaml"]))
			var names []string
			for _, o := range objs {
				names = append(names, o.GetName())
			}
			t.Logf("the chart's default runtimes: %s", strings.Join(names, ", "))
			if !strings.Contains(strings.Join(names, ","), "torch-distributed") {
				t.Fatalf("no torch-distributed among the default runtimes %v", names)
			}
			if err := client.ApplyObjects(ctx, objs, ""); err != nil {
				t.Fatal(err)
			}
			createEventually(ctx, t, env, trainJobs, "default", trainJob("upstream", "torch-distributed", 2))
			torchPods(ctx, t, env, "upstream", 2)
			// kwok completes the pods; Trainer follows its JobSet to Complete.
			waitFor(t, 3*time.Minute, "TrainJob upstream Complete", func() bool {
				return hasCondition(ctx, env, trainJobs, "default", "upstream", "Complete")
			})
		})
	})

	t.Run("MPI Operator manifests", func(t *testing.T) {
		pod := readyPod(ctx, t, env, "mpi-operator", "app.kubernetes.io/name=mpi-operator")
		pids = append(pids, runs(t, env, pod, testenv.MPIOperator, "--lock-namespace=mpi-operator"))

		worker := map[string]any{"containers": []any{map[string]any{
			"name": "worker", "image": "mpioperator/mpi-pi:openmpi", "command": []any{"/usr/sbin/sshd", "-De"},
		}}}
		launcher := map[string]any{"containers": []any{map[string]any{
			"name": "launcher", "image": "mpioperator/mpi-pi:openmpi", "command": []any{"mpirun", "-n", "2", "/home/mpiuser/pi"},
		}}}
		job := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
			"metadata": map[string]any{"name": "pi", "namespace": "default"},
			"spec": map[string]any{
				"slotsPerWorker":   int64(1),
				"sshAuthMountPath": "/home/mpiuser/.ssh",
				"mpiReplicaSpecs": map[string]any{
					"Launcher": map[string]any{"replicas": int64(1), "template": map[string]any{"spec": launcher}},
					"Worker":   map[string]any{"replicas": int64(2), "template": map[string]any{"spec": worker}},
				},
			},
		}}
		// The manifest's CRD was applied with the rest: served shortly after.
		createEventually(ctx, t, env, mpiJobs, "default", job)
		waitFor(t, 2*time.Minute, "a launcher and 2 workers of MPIJob pi", func() bool {
			pods, err := env.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "training.kubeflow.org/job-name=pi"})
			if err != nil {
				return false
			}
			n := map[string]int{}
			for _, p := range pods.Items {
				n[p.Labels["training.kubeflow.org/job-role"]]++
			}
			return n["launcher"] == 1 && n["worker"] == 2
		})
		// The hostfile and the SSH keys the operator made for them.
		if cm, err := env.Client.CoreV1().ConfigMaps("default").Get(ctx, "pi-config", metav1.GetOptions{}); err != nil {
			t.Errorf("the MPIJob's ConfigMap: %v", err)
		} else if hosts := cm.Data["hostfile"]; !strings.Contains(hosts, "pi-worker-0") || !strings.Contains(hosts, "pi-worker-1") {
			t.Errorf("hostfile %q does not list both workers", hosts)
		}
		if _, err := env.Client.CoreV1().Secrets("default").Get(ctx, "pi-ssh", metav1.GetOptions{}); err != nil {
			t.Errorf("the MPIJob's SSH Secret: %v", err)
		}
		// kwok completes the launcher Job's pod: the operator marks the MPIJob Succeeded.
		waitFor(t, 2*time.Minute, "MPIJob pi Succeeded", func() bool {
			return hasCondition(ctx, env, mpiJobs, "default", "pi", "Succeeded")
		})
	})

	t.Run("the API server called JobSet's and Trainer's webhooks through the egress proxy", func(t *testing.T) {
		log, _ := os.ReadFile(filepath.Join(env.Dir, "egress.log"))
		for _, svc := range []struct{ ns, name string }{{"jobset-system", "jobset-webhook-service"}, {"kubeflow-system", "kubeflow-trainer-controller-manager"}} {
			s, err := env.Client.CoreV1().Services(svc.ns).Get(ctx, svc.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if want := "CONNECT " + s.Spec.ClusterIP + ":443 → 127.0.0.1:"; !strings.Contains(string(log), want) {
				t.Errorf("egress.log has no %q for %s/%s", want, svc.ns, svc.name)
			}
		}
	})

	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = true
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("Stop left the pod runner's process %d running", pid)
		}
	}
}

// replicatedJob is a JobSet replicated job of replicas Jobs with parallelism
// pods each.
func replicatedJob(name string, replicas, parallelism int64) map[string]any {
	return map[string]any{
		"name": name, "replicas": replicas,
		"template": map[string]any{"spec": map[string]any{
			"parallelism": parallelism, "completions": parallelism,
			"template": map[string]any{"spec": map[string]any{
				"restartPolicy": "Never",
				"containers":    []any{map[string]any{"name": "c", "image": "busybox"}},
			}},
		}},
	}
}

func trainJob(name, runtime string, nodes int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec": map[string]any{
			"runtimeRef": map[string]any{"name": runtime},
			"trainer":    map[string]any{"numNodes": nodes},
		},
	}}
}

// createEventually creates obj, retrying while the API server cannot take it
// yet: the webhooks are not yet served (the cert rotator writes the Secret,
// the runner projects it and the CA bundle is patched in shortly after the
// pod is Ready), or the object's CRD, just applied, is not yet served.
func createEventually(ctx context.Context, t *testing.T, env *testenv.Env, gvr schema.GroupVersionResource, ns string, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	var created *unstructured.Unstructured
	waitFor(t, 2*time.Minute, "the "+obj.GetKind()+" "+obj.GetName()+" created", func() bool {
		var err error
		if ns == "" {
			created, err = env.Dynamic.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{})
		} else {
			created, err = env.Dynamic.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		}
		if err != nil {
			t.Logf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
		return err == nil
	})
	return created
}

// torchPods waits for the n pods of the JobSet a TrainJob became and checks
// the torch environment Trainer injected into their trainer container.
func torchPods(ctx context.Context, t *testing.T, env *testenv.Env, trainJob string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	waitFor(t, 3*time.Minute, "JobSet "+trainJob+" and its "+strconv.Itoa(n)+" pods", func() bool {
		if _, err := env.Dynamic.Resource(jobSets).Namespace("default").Get(ctx, trainJob, metav1.GetOptions{}); err != nil {
			return false
		}
		list, err := env.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=" + trainJob})
		pods = nil
		if err == nil {
			pods = list.Items
		}
		return len(pods) == n
	})
	for _, p := range pods {
		vars := map[string]corev1.EnvVar{}
		for _, c := range p.Spec.Containers {
			if c.Name == "node" {
				for _, e := range c.Env {
					vars[e.Name] = e
				}
			}
		}
		for name, want := range map[string]string{
			"PET_NNODES":      strconv.Itoa(n),
			"PET_MASTER_ADDR": trainJob + "-node-0-0." + trainJob,
			"PET_MASTER_PORT": "29500",
		} {
			if vars[name].Value != want {
				t.Errorf("pod %s: %s=%q, want %q", p.Name, name, vars[name].Value, want)
			}
		}
		if p.Name == pods[0].Name {
			t.Logf("pod %s: PET_NNODES=%s PET_NPROC_PER_NODE=%s PET_MASTER_ADDR=%s PET_MASTER_PORT=%s PET_NODE_RANK from %+v",
				p.Name, vars["PET_NNODES"].Value, vars["PET_NPROC_PER_NODE"].Value, vars["PET_MASTER_ADDR"].Value, vars["PET_MASTER_PORT"].Value, vars["PET_NODE_RANK"].ValueFrom.FieldRef)
		}
		if _, ok := vars["PET_NPROC_PER_NODE"]; !ok {
			t.Errorf("pod %s has no PET_NPROC_PER_NODE", p.Name)
		}
		if rank := vars["PET_NODE_RANK"].ValueFrom; rank == nil || rank.FieldRef == nil || !strings.Contains(rank.FieldRef.FieldPath, "job-completion-index") {
			t.Errorf("pod %s: PET_NODE_RANK is not the Job completion index: %+v", p.Name, vars["PET_NODE_RANK"])
		}
	}
	return pods
}

// yamlObjects parses a multi-document YAML file into objects.
func yamlObjects(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}
