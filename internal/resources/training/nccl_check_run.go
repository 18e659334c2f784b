package training

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/fabric"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// Running a check: apply the MPIJob, wait for its launcher to finish (or
// fail early with a pod's reason when it cannot start), read the launcher's
// log through the pods/log subresource, judge it, and delete the MPIJob
// whatever happened.

const reportEvery = 15 * time.Second

// outcome of a finished run.
type outcome struct {
	Result *fabric.Result
	Eval   fabric.Evaluation
	Input  fabric.Input // what the run was judged with (the checklist's commands name the job)
	RanAt  time.Time
}

// errNotServed marks a cluster without the MPI Operator's CRD.
var errNotServed = errors.New("no MPI Operator")

func notServed(err error) bool { return errors.Is(err, errNotServed) }

// removeJob deletes the MPIJob and its dependents (launcher Job, workers,
// Services, ConfigMap, Secret) and waits until it is gone. On a cluster
// that does not serve MPIJobs it fails saying so (the read names what to
// install); notServed tells that case apart.
func removeJob(ctx context.Context, c *kube.Client, ref kube.Ref) error {
	_, found, err := c.Get(ctx, MPIJobKind, ref)
	if err != nil {
		if served, serr := c.Served(ctx, MPIJobKind); serr == nil && !served {
			return fmt.Errorf("%w: %v", errNotServed, err)
		}
		return err
	}
	if !found {
		return nil
	}
	return c.DeleteForeground(ctx, MPIJobKind, ref)
}

// run executes the check described by s.
func run(ctx context.Context, c *kube.Client, s *spec) (*outcome, error) {
	// A run interrupted earlier (apply cancelled) may have left its MPIJob:
	// its pods would hold the nodes and its log is stale.
	if err := removeJob(ctx, c, s.Ref); err != nil {
		return nil, err
	}
	if _, err := c.Apply(ctx, MPIJobKind, mpiJob(s)); err != nil {
		return nil, err
	}
	tflog.Info(ctx, fmt.Sprintf("NCCL check %s: MPIJob applied (%d nodes × %d GPUs: %s; timeout %s)",
		s.Ref, len(s.NodeNames), s.GPUsPerNode, strings.Join(s.NodeNames, ", "), s.Timeout))
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.Cleanup)
		defer cancel()
		if err := c.DeleteForeground(cctx, MPIJobKind, s.Ref); err != nil {
			tflog.Warn(ctx, fmt.Sprintf("NCCL check %s: deleting the MPIJob failed: %v", s.Ref, err))
		}
	}()

	wctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	launcher, jobFailure, err := waitLauncher(wctx, c, s)
	if err != nil {
		return nil, err
	}
	log, err := c.PodLogAll(ctx, launcher.Namespace, launcher.Name, launcherContainer, 0)
	if err != nil {
		return nil, fmt.Errorf("the launcher %s finished (%s) but its log cannot be read: %w", launcher.Name, launcher.Status.Phase, err)
	}
	return judge(s, launcher, jobFailure, log, time.Now().UTC())
}

// judge parses the launcher's log and evaluates it: the busbw of the
// largest-size row against the peak, or a verdict of its own for wrong
// values, a truncated table, no table, or a launcher that failed. A failed
// run comes back as an error holding fabric.Message (the verdict with its
// numbers, the reasons and the whole checklist).
func judge(s *spec, launcher *corev1.Pod, jobFailure string, log kube.PodLog, at time.Time) (*outcome, error) {
	in := s.Input
	in.Namespace, in.JobName, in.Workers, in.HostNetwork = s.Ref.Namespace, s.Ref.Name, len(s.NodeNames), s.HostNetwork
	r, perr := fabric.Parse(log.Text)
	ev, err := fabric.Evaluate(r, in)
	if err != nil {
		return nil, errors.New(fabric.Message(r, nil, in, err))
	}
	if launcher.Status.Phase != corev1.PodSucceeded {
		why := fmt.Sprintf("the launcher pod %s %s", launcher.Name, describeExit(launcher))
		if jobFailure != "" {
			why += "; the MPIJob says: " + jobFailure
		}
		ev.LauncherFailed(why)
	}
	if !ev.Failed {
		return &outcome{Result: r, Eval: ev, Input: in, RanAt: at}, nil
	}
	cause := fmt.Sprintf("NCCL check %s: %s", s.Ref, ev.Verdict)
	if log.Truncated && perr != nil {
		cause += fmt.Sprintf(" (the log is longer than %d bytes and was read only that far)", kube.DefaultLogLimit)
	}
	if errors.Is(perr, fabric.ErrNoTable) {
		if tail := lastLines(log.Text, 15); tail != "" {
			cause += "\nlast lines of the launcher's log:\n" + tail
		}
	}
	return nil, errors.New(fabric.Message(r, &ev, in, errors.New(cause)))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.TrimSpace(strings.Join(lines, "\n"))
	if out == "" {
		return ""
	}
	return "    " + strings.ReplaceAll(out, "\n", "\n    ")
}

// fatalWaiting are container waiting reasons that do not go away by
// themselves: the check fails at once with the pod's story.
var fatalWaiting = map[string]bool{
	"ImagePullBackOff": true, "ErrImageNeverPull": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "CrashLoopBackOff": true,
}

// waitLauncher waits until the launcher pod has finished. It returns early
// with an error when a pod cannot start, when the MPIJob fails before any
// launcher ran, or when ctx ends (with every unfinished pod's reason).
func waitLauncher(ctx context.Context, c *kube.Client, s *spec) (*corev1.Pod, string, error) {
	start, next := time.Now(), time.Now().Add(reportEvery)
	for {
		job, found, err := c.Get(ctx, MPIJobKind, s.Ref)
		if err != nil && ctx.Err() == nil {
			return nil, "", err
		}
		if err == nil && !found {
			return nil, "", fmt.Errorf("the MPIJob %s was deleted while the check ran (after %s)", s.Ref, since(start))
		}
		pods, _ := c.PodsMatching(ctx, s.Ref.Namespace, PodSelector(s.Ref.Name))
		failure := jobCondition(job, "Failed")
		if l := finishedLauncher(pods); l != nil {
			return l, failure, nil
		}
		for i := range pods {
			if why := stuck(&pods[i]); why != "" {
				return nil, "", fmt.Errorf("NCCL check %s cannot start after %s: %s", s.Ref, since(start), why)
			}
		}
		if failure != "" {
			return nil, "", fmt.Errorf("the MPIJob %s failed after %s before its launcher finished: %s%s", s.Ref, since(start), failure, podStories(pods))
		}
		if ctx.Err() != nil {
			return nil, "", fmt.Errorf("NCCL check %s did not finish within %s%s%s", s.Ref, since(start), suspended(job), podStories(pods))
		}
		if time.Now().After(next) {
			next = time.Now().Add(reportEvery)
			tflog.Info(ctx, fmt.Sprintf("NCCL check %s: running, %s elapsed%s%s", s.Ref, since(start), suspended(job), podStories(pods)))
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Second) }

// jobCondition returns "reason: message" of a true condition of the MPIJob.
func jobCondition(job *unstructured.Unstructured, typ string) string {
	if job == nil {
		return ""
	}
	conds, _, _ := unstructured.NestedSlice(job.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != typ || m["status"] != "True" {
			continue
		}
		return strings.TrimSpace(fmt.Sprintf("%v: %v", m["reason"], m["message"]))
	}
	return ""
}

func suspended(job *unstructured.Unstructured) string {
	if jobCondition(job, "Suspended") != "" {
		return "; the MPIJob is suspended (queued in Kueue until nodes are free)"
	}
	return ""
}

// finishedLauncher is the newest launcher pod that has finished.
func finishedLauncher(pods []corev1.Pod) *corev1.Pod {
	for i := len(pods) - 1; i >= 0; i-- {
		p := &pods[i]
		if p.Labels[JobRoleLabel] == launcherRole && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
			return p
		}
	}
	return nil
}

// stuck says why a pod cannot start, or "".
func stuck(p *corev1.Pod) string {
	for _, st := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := st.State.Waiting; w != nil && fatalWaiting[w.Reason] {
			return fmt.Sprintf("pod %s (%s): container %s is waiting: %s", p.Name, role(p), st.Name, strings.TrimSpace(w.Reason+" "+w.Message))
		}
	}
	if p.Status.Phase == corev1.PodFailed && role(p) != launcherRole {
		return fmt.Sprintf("pod %s (%s) failed: %s", p.Name, role(p), describeExit(p))
	}
	return ""
}

func role(p *corev1.Pod) string {
	if r := p.Labels[JobRoleLabel]; r != "" {
		return r
	}
	return "pod"
}

// describeExit says how a pod ended.
func describeExit(p *corev1.Pod) string {
	var parts []string
	parts = append(parts, fmt.Sprintf("is %s", p.Status.Phase))
	if p.Status.Reason != "" || p.Status.Message != "" {
		parts = append(parts, strings.TrimSpace(p.Status.Reason+" "+p.Status.Message))
	}
	for _, st := range p.Status.ContainerStatuses {
		if t := st.State.Terminated; t != nil && t.ExitCode != 0 {
			d := fmt.Sprintf("container %s exited with code %d", st.Name, t.ExitCode)
			if t.Reason != "" {
				d += " (" + t.Reason + ")"
			}
			parts = append(parts, d)
		}
	}
	return strings.Join(parts, ": ")
}

// podStories describes the pods that have not finished: where they are and
// why they wait (Unschedulable with the scheduler's message, image pulls).
func podStories(pods []corev1.Pod) string {
	if len(pods) == 0 {
		return "; no pod has been created yet"
	}
	var b strings.Builder
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		fmt.Fprintf(&b, "\n  pod %s (%s) %s", p.Name, role(p), p.Status.Phase)
		if p.Spec.NodeName != "" {
			fmt.Fprintf(&b, " on %s", p.Spec.NodeName)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				fmt.Fprintf(&b, ": %s %s", c.Reason, c.Message)
			}
		}
		for _, st := range p.Status.ContainerStatuses {
			if w := st.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" {
				fmt.Fprintf(&b, "; container %s waiting: %s", st.Name, strings.TrimSpace(w.Reason+" "+w.Message))
			}
		}
	}
	return b.String()
}
