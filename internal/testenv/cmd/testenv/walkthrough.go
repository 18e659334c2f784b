package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// walkthrough is the demo's last act: two 1-GPU Jobs submitted to a LocalQueue
// whose ClusterQueue has one GPU of quota. The real Kueue manager admits the
// first and holds the second suspended, with no pods, until the first is done.
func walkthrough(ctx context.Context, queue, namespace string) error {
	d, err := dir()
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(d, "kubeconfig"))
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	jobs := []string{"demo-job-1", "demo-job-2"}
	policy := metav1.DeletePropagationBackground
	for _, j := range jobs { // a previous demo's jobs
		_ = client.BatchV1().Jobs(namespace).Delete(ctx, j, metav1.DeleteOptions{PropagationPolicy: &policy})
	}
	for _, j := range jobs {
		for { // wait until a previous demo's job is gone
			if _, err := client.BatchV1().Jobs(namespace).Get(ctx, j, metav1.GetOptions{}); err != nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	start := time.Now()
	// The first Job is submitted and admitted before the second arrives, so
	// the order is the walkthrough's and not a creation-time tie.
	if _, err := client.BatchV1().Jobs(namespace).Create(ctx, demoJob(jobs[0], queue, "8s"), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("submitting %s: %w", jobs[0], err)
	}
	if err := waitAdmitted(ctx, client, namespace, jobs[0], 60*time.Second); err != nil {
		return err
	}
	if _, err := client.BatchV1().Jobs(namespace).Create(ctx, demoJob(jobs[1], queue, "2s"), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("submitting %s: %w", jobs[1], err)
	}
	fmt.Printf("Submitted %s (runs 8 s), then %s, 1 GPU each, to LocalQueue %s/%s.\n\n", jobs[0], jobs[1], namespace, queue)
	time.Sleep(2 * time.Second)
	if err := printJobs(ctx, client, namespace, jobs, time.Since(start)); err != nil {
		return err
	}
	if err := waitAdmitted(ctx, client, namespace, jobs[1], 90*time.Second); err != nil {
		return err
	}
	fmt.Println()
	return printJobs(ctx, client, namespace, jobs, time.Since(start))
}

// waitAdmitted waits until Kueue unsuspends the Job.
func waitAdmitted(ctx context.Context, client kubernetes.Interface, namespace, name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		j, err := client.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil && j.Spec.Suspend != nil && !*j.Spec.Suspend {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("Kueue did not admit %s within %s", name, timeout)
}

func demoJob(name, queue, runFor string) *batchv1.Job {
	one := int32(1)
	suspend := true
	gpu := resource.MustParse("1")
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{catalog.KueueQueueLabel: queue}},
		Spec: batchv1.JobSpec{
			Suspend: &suspend, Parallelism: &one, Completions: &one,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{testenv.PodCompleteDelayAnnotation: runFor}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "train", Image: "trainer:latest", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{"nvidia.com/gpu": gpu}, Limits: corev1.ResourceList{"nvidia.com/gpu": gpu},
					}}},
				},
			},
		},
	}
}

func printJobs(ctx context.Context, client kubernetes.Interface, namespace string, jobs []string, after time.Duration) error {
	fmt.Printf("after %s:\n", after.Round(time.Second))
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 3, ' ', 0)
	fmt.Fprintln(w, "JOB\tKUEUE\tSUSPENDED\tPODS\tNODE\tSTATUS")
	for _, name := range jobs {
		j, err := client.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + name})
		if err != nil {
			return err
		}
		var nodes []string
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				nodes = append(nodes, p.Spec.NodeName)
			}
		}
		suspended := j.Spec.Suspend != nil && *j.Spec.Suspend
		state, status := "admitted", "running"
		if suspended {
			state, status = "pending", "waiting for quota"
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				status = "complete"
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%v\t%d\t%s\t%s\n", name, state, suspended, len(pods.Items), strings.Join(nodes, ","), status)
	}
	return w.Flush()
}
