package manager_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// A TAS flavor places a 16-GPU Job that requires one block onto two whole
// 8-GPU nodes of the same block: block b2, the only block with two nodes
// (b1's node sorts first, so a placement ignoring blocks would use it).
func TestAccTopologyAwareSchedulingPlacesInOneBlock(t *testing.T) {
	env := acctest.Env(t)
	config := acctest.Provider(env) + fmt.Sprintf(`
resource "aiplatform_topology" "blocks" {
  name   = "blocks"
  levels = [%q, %q, "kubernetes.io/hostname"]
}

resource "aiplatform_resource_flavor" "tas" {
  name          = "tas-h100"
  node_labels   = { %q = "tas" }
  topology_name = aiplatform_topology.blocks.name
}

resource "aiplatform_cluster_queue" "tas" {
  name = "tas"
  resource_groups = [{
    covered_resources = ["nvidia.com/gpu"]
    flavors = [{ name = aiplatform_resource_flavor.tas.name, resources = [{ name = "nvidia.com/gpu", nominal_quota = "24" }] }]
  }]
}

resource "aiplatform_local_queue" "tas" {
  name          = "tas"
  namespace     = "default"
  cluster_queue = aiplatform_cluster_queue.tas.name
}
`, blockLabel, rackLabel, poolLabel)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.Factories,
		Steps: []resource.TestStep{{
			Config:           config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check: func(*terraform.State) error {
				job, err := submit(t, env, "tas-16", "tas", 2, 8, map[string]string{"kueue.x-k8s.io/podset-required-topology": blockLabel})
				if err != nil {
					return err
				}
				pods, err := waitPods(env, job, 2)
				if err != nil {
					return err
				}
				blocks, hosts := map[string]bool{}, map[string]bool{}
				for _, p := range pods {
					// Kueue's TAS, not the scheduler's choice: Kueue's topology
					// ungater pins each pod to the host it assigned.
					if p.Spec.NodeSelector["kubernetes.io/hostname"] != p.Spec.NodeName {
						return fmt.Errorf("pod %s on %s has node selector %v: not placed by Kueue's topology-aware scheduling", p.Name, p.Spec.NodeName, p.Spec.NodeSelector)
					}
					node, err := env.Client.CoreV1().Nodes().Get(context.Background(), p.Spec.NodeName, metav1.GetOptions{})
					if err != nil {
						return err
					}
					blocks[node.Labels[blockLabel]] = true
					hosts[node.Name] = true
				}
				if len(hosts) != 2 || len(blocks) != 1 || !blocks["b2"] {
					return fmt.Errorf("the 2 x 8-GPU pods landed on nodes %v in blocks %v; want two nodes of block b2", keys(hosts), keys(blocks))
				}
				return finish(env, job)
			},
		}},
	})
}

// submit creates a suspended Job in the LocalQueue queue, its pods asking for
// gpus each and running until the test ends, and deletes it afterwards.
func submit(t *testing.T, env *testenv.Env, name, queue string, pods int32, gpus int64, annotations map[string]string) (*batchv1.Job, error) {
	ann := map[string]string{testenv.PodCompleteDelayAnnotation: "1h"}
	for k, v := range annotations {
		ann[k] = v
	}
	gpu := corev1.ResourceList{"nvidia.com/gpu": *apiresource.NewQuantity(gpus, apiresource.DecimalSI)}
	suspend := true
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"kueue.x-k8s.io/queue-name": queue}},
		Spec: batchv1.JobSpec{
			Suspend: &suspend, Parallelism: &pods, Completions: &pods,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: ann},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "train", Image: "trainer:latest", Resources: corev1.ResourceRequirements{Requests: gpu, Limits: gpu}}},
				},
			},
		},
	}
	created, err := env.Client.BatchV1().Jobs("default").Create(context.Background(), job, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("submitting job %s: %w", name, err)
	}
	t.Cleanup(func() {
		policy := metav1.DeletePropagationBackground
		_ = env.Client.BatchV1().Jobs("default").Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: &policy})
	})
	return created, nil
}

// waitPods waits until the Job has n pods bound to nodes.
func waitPods(env *testenv.Env, job *batchv1.Job, n int) ([]corev1.Pod, error) {
	var bound []corev1.Pod
	var err error
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		var list *corev1.PodList
		list, err = env.Client.CoreV1().Pods(job.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "job-name=" + job.Name})
		if err == nil {
			bound = bound[:0]
			for _, p := range list.Items {
				if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
					bound = append(bound, p)
				}
			}
			if len(bound) == n {
				return bound, nil
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	return nil, fmt.Errorf("job %s: %d of %d pods bound to nodes within 2m (err %v)", job.Name, len(bound), n, err)
}

// finish deletes the Job and waits until its Workload is gone: Kueue keeps
// a ClusterQueue and its flavors (finalizer kueue.x-k8s.io/resource-in-use)
// while workloads use them, so the destroy after the step waits for that.
func finish(env *testenv.Env, job *batchv1.Job) error {
	ctx := context.Background()
	policy := metav1.DeletePropagationBackground
	if err := env.Client.BatchV1().Jobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		list, err := env.Dynamic.Resource(gvr("workloads")).Namespace(job.Namespace).List(ctx,
			metav1.ListOptions{LabelSelector: "kueue.x-k8s.io/job-uid=" + string(job.UID)})
		if err == nil && len(list.Items) == 0 {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("the Workload of job %s is still there 1m after the Job was deleted", job.Name)
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
