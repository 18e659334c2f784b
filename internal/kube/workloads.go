package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// Workloads: typed server-side apply, reads and deletes of the built-in
// objects a resource made of several objects manages (a claim, the Jobs that
// fill it, a DaemonSet), and what is needed to watch them work: their pods,
// and the tail of a pod's log.

// Kinds of the built-in workload objects (for messages and the generic path).
var (
	PersistentVolumeClaimKind = Kind{Version: "v1", Resource: "persistentvolumeclaims", Kind: "PersistentVolumeClaim", Namespaced: true}
	JobKind                   = Kind{Group: "batch", Version: "v1", Resource: "jobs", Kind: "Job", Namespaced: true}
	DaemonSetKind             = Kind{Group: "apps", Version: "v1", Resource: "daemonsets", Kind: "DaemonSet", Namespaced: true}
	SecretKind                = Kind{Version: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true}
	PodKind                   = Kind{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true}
)

func (c *Client) applyOptions() metav1.ApplyOptions {
	return metav1.ApplyOptions{FieldManager: FieldManager, Force: c.forceConflicts}
}

// getTyped calls get and turns "not found" into found=false.
func getTyped[T any](ctx context.Context, c *Client, k Kind, ref Ref, get func() (T, error)) (obj T, found bool, err error) {
	obj, err = get()
	if isObjectNotFound(err) {
		var zero T
		return zero, false, nil
	}
	if err != nil {
		var zero T
		return zero, false, c.explain(ctx, err, "read", k, ref)
	}
	return obj, true, nil
}

func refOf(namespace string, name *string) Ref {
	r := Ref{Namespace: namespace}
	if name != nil {
		r.Name = *name
	}
	return r
}

func nsOf(ns *string) string {
	if ns == nil {
		return ""
	}
	return *ns
}

// ApplyPersistentVolumeClaim server-side applies a claim.
func (c *Client) ApplyPersistentVolumeClaim(ctx context.Context, pvc *corev1ac.PersistentVolumeClaimApplyConfiguration) (*corev1.PersistentVolumeClaim, error) {
	typed, err := c.Typed()
	if err != nil {
		return nil, err
	}
	ns := nsOf(pvc.Namespace)
	live, err := typed.CoreV1().PersistentVolumeClaims(ns).Apply(ctx, pvc, c.applyOptions())
	if err != nil {
		return nil, c.applyError(ctx, err, PersistentVolumeClaimKind, refOf(ns, pvc.Name), pvc)
	}
	return live, nil
}

// GetPersistentVolumeClaim reads a claim; found is false when it does not exist.
func (c *Client) GetPersistentVolumeClaim(ctx context.Context, ref Ref) (*corev1.PersistentVolumeClaim, bool, error) {
	typed, err := c.Typed()
	if err != nil {
		return nil, false, err
	}
	return getTyped(ctx, c, PersistentVolumeClaimKind, ref, func() (*corev1.PersistentVolumeClaim, error) {
		return typed.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	})
}

// ApplyJob server-side applies a Job. A Job's pod template is immutable: to
// run a different one, delete the Job first (DeleteJobs).
func (c *Client) ApplyJob(ctx context.Context, job *batchv1ac.JobApplyConfiguration) (*batchv1.Job, error) {
	typed, err := c.Typed()
	if err != nil {
		return nil, err
	}
	ns := nsOf(job.Namespace)
	live, err := typed.BatchV1().Jobs(ns).Apply(ctx, job, c.applyOptions())
	if err != nil {
		return nil, c.applyError(ctx, err, JobKind, refOf(ns, job.Name), job)
	}
	return live, nil
}

// GetJob reads a Job; found is false when it does not exist.
func (c *Client) GetJob(ctx context.Context, ref Ref) (*batchv1.Job, bool, error) {
	typed, err := c.Typed()
	if err != nil {
		return nil, false, err
	}
	return getTyped(ctx, c, JobKind, ref, func() (*batchv1.Job, error) {
		return typed.BatchV1().Jobs(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	})
}

// DeleteJobs deletes the Jobs of a namespace that match a label selector,
// with foreground propagation, and waits until they and their pods are gone
// (so that no pod of an old Job still writes where a new one is about to).
func (c *Client) DeleteJobs(ctx context.Context, namespace, selector string) error {
	typed, err := c.Typed()
	if err != nil {
		return err
	}
	jobs := typed.BatchV1().Jobs(namespace)
	list, err := jobs.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return c.explain(ctx, err, "list", JobKind, Ref{Namespace: namespace, Name: "-l " + selector})
	}
	policy := metav1.DeletePropagationForeground
	for _, j := range list.Items {
		if j.DeletionTimestamp != nil {
			continue
		}
		err := jobs.Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &policy})
		if err != nil && !isObjectNotFound(err) {
			return c.explain(ctx, err, "delete", JobKind, Ref{Namespace: namespace, Name: j.Name})
		}
	}
	if len(list.Items) == 0 {
		return nil
	}
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		left, err := jobs.List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		return len(left.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the Jobs %s in %s to be deleted: %w", selector, namespace, err)
	}
	return nil
}

// ApplyDaemonSet server-side applies a DaemonSet.
func (c *Client) ApplyDaemonSet(ctx context.Context, ds *appsv1ac.DaemonSetApplyConfiguration) (*appsv1.DaemonSet, error) {
	typed, err := c.Typed()
	if err != nil {
		return nil, err
	}
	ns := nsOf(ds.Namespace)
	live, err := typed.AppsV1().DaemonSets(ns).Apply(ctx, ds, c.applyOptions())
	if err != nil {
		return nil, c.applyError(ctx, err, DaemonSetKind, refOf(ns, ds.Name), ds)
	}
	return live, nil
}

// GetDaemonSet reads a DaemonSet; found is false when it does not exist.
func (c *Client) GetDaemonSet(ctx context.Context, ref Ref) (*appsv1.DaemonSet, bool, error) {
	typed, err := c.Typed()
	if err != nil {
		return nil, false, err
	}
	return getTyped(ctx, c, DaemonSetKind, ref, func() (*appsv1.DaemonSet, error) {
		return typed.AppsV1().DaemonSets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	})
}

// DeleteForeground deletes an object with foreground propagation (its
// dependents, e.g. a DaemonSet's pods, go first) and waits until it is gone.
// A missing object is not an error.
func (c *Client) DeleteForeground(ctx context.Context, k Kind, ref Ref) error {
	return c.deleteAndWait(ctx, k, ref, metav1.DeletePropagationForeground)
}

// SecretExists tells whether a Secret exists, without reading its data into
// anything but this call.
func (c *Client) SecretExists(ctx context.Context, ref Ref) (bool, error) {
	typed, err := c.Typed()
	if err != nil {
		return false, err
	}
	_, found, err := getTyped(ctx, c, SecretKind, ref, func() (*corev1.Secret, error) {
		return typed.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	})
	return found, err
}

// PodsMatching lists the pods of a namespace that match a label selector,
// fresh (not the per-run cache of ActivePods), oldest first.
func (c *Client) PodsMatching(ctx context.Context, namespace, selector string) ([]corev1.Pod, error) {
	typed, err := c.Typed()
	if err != nil {
		return nil, err
	}
	list, err := typed.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, c.explain(ctx, err, "list", PodKind, Ref{Namespace: namespace, Name: "-l " + selector})
	}
	pods := list.Items
	for i := 1; i < len(pods); i++ { // insertion sort by creation: a handful of pods
		for j := i; j > 0 && pods[j].CreationTimestamp.Before(&pods[j-1].CreationTimestamp); j-- {
			pods[j], pods[j-1] = pods[j-1], pods[j]
		}
	}
	return pods, nil
}

// logTimeout bounds a log read: the API server proxies it to the node's
// kubelet, which may be slow or absent.
const logTimeout = 5 * time.Second

// ErrLogsUnavailable wraps every failure to read a pod's log. The API server
// fetches logs from the kubelet of the pod's node, so they are unavailable
// when the node is gone, unreachable from the API server, or not a real
// kubelet at all (kwok's fake nodes serve no logs).
var ErrLogsUnavailable = errors.New("pod logs unavailable")

// PodLogTail returns the last lines of a container's log.
func (c *Client) PodLogTail(ctx context.Context, namespace, pod, container string, lines int64) (string, error) {
	typed, err := c.Typed()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, logTimeout)
	defer cancel()
	body, err := typed.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, TailLines: &lines}).DoRaw(ctx)
	if err != nil {
		msg := strings.TrimSpace(err.Error())
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		return "", fmt.Errorf("%w: reading the log of %s/%s container %s: %s", ErrLogsUnavailable, namespace, pod, container, msg)
	}
	return string(body), nil
}

// EventsFor lists the events about one object (by kind and name) with a
// given reason, e.g. a DaemonSet's FailedDaemonPod events.
func (c *Client) EventsFor(ctx context.Context, namespace, kind, name, reason string) ([]corev1.Event, error) {
	typed, err := c.Typed()
	if err != nil {
		return nil, err
	}
	selector := "involvedObject.kind=" + kind + ",involvedObject.name=" + name
	if reason != "" {
		selector += ",reason=" + reason
	}
	list, err := typed.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		return nil, c.explain(ctx, err, "list", Kind{Version: "v1", Resource: "events", Kind: "Event", Namespaced: true}, Ref{Namespace: namespace, Name: kind + "/" + name})
	}
	return list.Items, nil
}

// StorageClassExists tells whether a StorageClass exists.
func (c *Client) StorageClassExists(ctx context.Context, name string) (bool, error) {
	typed, err := c.Typed()
	if err != nil {
		return false, err
	}
	k := Kind{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses", Kind: "StorageClass"}
	_, found, err := getTyped(ctx, c, k, Ref{Name: name}, func() (*storagev1.StorageClass, error) {
		return typed.StorageV1().StorageClasses().Get(ctx, name, metav1.GetOptions{})
	})
	return found, err
}
