package testenv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestStorageAndPodFailure: a claim of the default class binds to a hostPath
// volume and a Job's pod mounting it is scheduled; PodFailAnnotation fails
// the pod with its message; deleting the claim deletes the volume.
func TestStorageAndPodFailure(t *testing.T) {
	if os.Getenv("TF_ACC") == "" && os.Getenv("TESTENV_E2E") == "" {
		t.Skip("set TF_ACC or TESTENV_E2E to start a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env, err := Start(ctx, Options{Nodes: []NodePool{{Name: "st", Count: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c := env.Client
	const ns = "default"

	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "weights", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("100Gi")}},
		},
	}
	if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var volume string
	waitFor(t, 30*time.Second, "claim Bound", func() (bool, error) {
		got, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "weights", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		volume = got.Spec.VolumeName
		return got.Status.Phase == corev1.ClaimBound, nil
	})
	pv, err := c.CoreV1().PersistentVolumes().Get(ctx, volume, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Spec.StorageClassName != StorageClass || pv.Spec.HostPath == nil || !strings.HasPrefix(pv.Spec.HostPath.Path, filepath.Join(env.Dir, "volumes")) ||
		pv.Spec.AccessModes[0] != corev1.ReadWriteMany || pv.Spec.Capacity.Storage().String() != "100Gi" {
		t.Errorf("volume %s: %+v", pv.Name, pv.Spec)
	}

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "fetch", Namespace: ns},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{PodFailAnnotation: "403 Forbidden"}},
				Spec: corev1.PodSpec{
					RestartPolicy:  corev1.RestartPolicyNever,
					InitContainers: []corev1.Container{{Name: "download", Image: "example.invalid/dl"}},
					Containers:     []corev1.Container{{Name: "main", Image: "example.invalid/main"}},
					Volumes: []corev1.Volume{{Name: "w", VolumeSource: corev1.VolumeSource{
						PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "weights"},
					}}},
				},
			},
		},
	}
	if _, err := c.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "Job Failed", func() (bool, error) {
		j, err := c.BatchV1().Jobs(ns).Get(ctx, "fetch", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range j.Status.Conditions {
			if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
				t.Fatal("the Job completed: pod-complete ignored PodFailAnnotation")
			}
			if cond.Type == batchv1.JobFailed && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=fetch"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods: %v %v", pods, err)
	}
	p := pods.Items[0]
	if p.Status.Phase != corev1.PodFailed || p.Spec.NodeName == "" || len(p.Status.InitContainerStatuses) != 1 {
		t.Fatalf("pod %s: phase %s node %q init %+v", p.Name, p.Status.Phase, p.Spec.NodeName, p.Status.InitContainerStatuses)
	}
	if term := p.Status.InitContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 1 || term.Message != "403 Forbidden" {
		t.Errorf("init container status %+v", p.Status.InitContainerStatuses[0].State)
	}
	if w := p.Status.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "PodInitializing" {
		t.Errorf("container status %+v", p.Status.ContainerStatuses[0].State)
	}

	foreground := metav1.DeletePropagationForeground
	if err := c.BatchV1().Jobs(ns).Delete(ctx, "fetch", metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "weights", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "claim and volume deleted", func() (bool, error) {
		_, err1 := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "weights", metav1.GetOptions{})
		_, err2 := c.CoreV1().PersistentVolumes().Get(ctx, volume, metav1.GetOptions{})
		return apierrors.IsNotFound(err1) && apierrors.IsNotFound(err2), nil
	})
	if _, err := os.Stat(pv.Spec.HostPath.Path); !os.IsNotExist(err) {
		t.Errorf("the volume's directory is left: %v", err)
	}
}
