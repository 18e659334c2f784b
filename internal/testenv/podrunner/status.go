package podrunner

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// setStatus writes the pod's status as a kubelet would: Running with the
// container started (restarts != nil) or waiting with message, and Ready.
func (lp *localPod) setStatus(ctx context.Context, restarts *int32, ready bool, message string) {
	lp.mu.Lock()
	namespace, name := lp.pod.Namespace, lp.pod.Name
	lp.mu.Unlock()
	pods := lp.runner.client.CoreV1().Pods(namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		st := &pod.Status
		st.Phase = corev1.PodRunning
		st.HostIP = "127.0.0.1"
		st.HostIPs = []corev1.HostIP{{IP: "127.0.0.1"}}
		if st.StartTime == nil {
			st.StartTime = &now
		}
		boolStatus := func(b bool) corev1.ConditionStatus {
			if b {
				return corev1.ConditionTrue
			}
			return corev1.ConditionFalse
		}
		setCondition(st, corev1.PodInitialized, corev1.ConditionTrue, now)
		setCondition(st, corev1.ContainersReady, boolStatus(ready), now)
		setCondition(st, corev1.PodReady, boolStatus(ready), now)
		st.ContainerStatuses = nil
		for _, c := range pod.Spec.Containers {
			cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image}
			if c.Name != lp.container.Name {
				// Not run: reported as running, as kwok would.
				cs.Ready, cs.Started = true, ptr.To(true)
				cs.State.Running = &corev1.ContainerStateRunning{StartedAt: *st.StartTime}
			} else if restarts != nil {
				cs.Ready, cs.Started, cs.RestartCount = ready, ptr.To(true), *restarts
				cs.State.Running = &corev1.ContainerStateRunning{StartedAt: now}
				lp.mu.Lock()
				if lp.proc != nil {
					cs.ContainerID = fmt.Sprintf("testenv://%d", lp.proc.PID)
				}
				lp.mu.Unlock()
			} else {
				reason := "CreateContainerError"
				if strings.HasPrefix(message, building) {
					reason = "ContainerCreating"
				}
				cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: message}
			}
			if c.Name == lp.container.Name && restarts != nil && message != "" {
				cs.State.Running = nil
				cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: message}
			}
			st.ContainerStatuses = append(st.ContainerStatuses, cs)
		}
		_, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
	if err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) {
		lp.logf("updating its status: %v", err)
	}
}

func setCondition(st *corev1.PodStatus, t corev1.PodConditionType, s corev1.ConditionStatus, now metav1.Time) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			if st.Conditions[i].Status != s {
				st.Conditions[i].Status, st.Conditions[i].LastTransitionTime = s, now
			}
			return
		}
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now})
}
