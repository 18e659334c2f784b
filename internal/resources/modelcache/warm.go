package modelcache

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// Waiting for a warm-up, with progress in the log and, when it fails, an
// error that says why: the Job's (or pod's) reason, the container's exit and
// termination message, and the last lines of its log when they can be read.

const (
	// reportEvery is how often progress is logged while waiting.
	reportEvery = 15 * time.Second
	// grace is how much longer than timeout the provider waits for a Job, so
	// that the Job's own deadline (activeDeadlineSeconds) is what reports it.
	grace = time.Minute
	// logLines is how much of a failed container's log an error quotes.
	logLines = 20
)

// errTimeout marks a wait that ran out of time.
var errTimeout = errors.New("timed out")

// outcome of a successful warm-up.
type outcome struct {
	SizeBytes *int64
	Files     *int64
}

var (
	bytesField = regexp.MustCompile(`\bbytes=(\d+)`)
	filesField = regexp.MustCompile(`\bfiles=(\d+)`)
)

// parseProgress reads the last "bytes=N" and "files=N" of text (a log tail
// or a termination message). Downloaders that print these fields get their
// progress logged; the default scripts and finalize do.
func parseProgress(text string) outcome {
	var o outcome
	lines := strings.Split(strings.TrimSpace(text), "\n")
	for i := len(lines) - 1; i >= 0 && (o.SizeBytes == nil || o.Files == nil); i-- {
		if m := bytesField.FindStringSubmatch(lines[i]); m != nil && o.SizeBytes == nil {
			if n, err := strconv.ParseInt(m[1], 10, 64); err == nil {
				o.SizeBytes = &n
			}
		}
		if m := filesField.FindStringSubmatch(lines[i]); m != nil && o.Files == nil {
			if n, err := strconv.ParseInt(m[1], 10, 64); err == nil {
				o.Files = &n
			}
		}
	}
	return o
}

func (o outcome) String() string {
	var parts []string
	if o.SizeBytes != nil {
		parts = append(parts, humanBytes(*o.SizeBytes))
	}
	if o.Files != nil {
		parts = append(parts, fmt.Sprintf("%d files", *o.Files))
	}
	return strings.Join(parts, " in ")
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// waiter polls one warm-up and logs its progress.
type waiter struct {
	client  *kube.Client
	what    string // "model cache default/llama (revision main)"
	start   time.Time
	next    time.Time
	logsErr error // the first failure to read a log: not retried at every report
}

func newWaiter(c *kube.Client, s *spec) *waiter {
	now := time.Now()
	return &waiter{client: c, what: fmt.Sprintf("model cache %s (revision %s)", s.ref(), s.EffectiveRevision), start: now, next: now.Add(reportEvery)}
}

func (w *waiter) elapsed() time.Duration { return time.Since(w.start).Round(time.Second) }

// sleep waits before the next poll: briefly at first (most warm-ups in tests
// and small models finish in seconds), then every 2 s.
func (w *waiter) sleep(ctx context.Context) error {
	d := time.Second
	if time.Since(w.start) > 20*time.Second {
		d = 2 * time.Second
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// due reports whether a progress line is due.
func (w *waiter) due() bool {
	if time.Now().Before(w.next) {
		return false
	}
	w.next = time.Now().Add(reportEvery)
	return true
}

// progressOf reads a running downloader's last progress line from its log.
func (w *waiter) progressOf(ctx context.Context, pod *corev1.Pod) string {
	if w.logsErr != nil || pod == nil || !containerRunning(pod, containerDownload) {
		return ""
	}
	tail, err := w.client.PodLogTail(ctx, pod.Namespace, pod.Name, containerDownload, 10)
	if err != nil {
		w.logsErr = err
		tflog.Info(ctx, fmt.Sprintf("%s: download progress cannot be read from the pod's log (%v); only the elapsed time is reported", w.what, err))
		return ""
	}
	if o := parseProgress(tail); o.SizeBytes != nil || o.Files != nil {
		return "; downloaded so far: " + o.String()
	}
	return ""
}

func containerRunning(pod *corev1.Pod, name string) bool {
	for _, st := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if st.Name == name && st.State.Running != nil {
			return true
		}
	}
	return false
}

// warmJob runs the warm-up Job of mode pvc and waits for it.
func warmJob(ctx context.Context, c *kube.Client, s *spec, keep string) (outcome, error) {
	// No other warm-up of this cache may write while this one does: older
	// Jobs (a previous revision, a failed attempt) go first, with their pods.
	if err := c.DeleteJobs(ctx, s.Namespace, s.selector()); err != nil {
		return outcome{}, fmt.Errorf("removing earlier warm-up Jobs: %w", err)
	}
	job := s.job(keep)
	if _, err := c.ApplyJob(ctx, job); err != nil {
		return outcome{}, err
	}
	tflog.Info(ctx, fmt.Sprintf("model cache %s: warm-up Job %s started (revision %s into %s, timeout %s)",
		s.ref(), s.jobName(), s.EffectiveRevision, s.SubPath, s.Timeout))
	ctx, cancel := context.WithTimeout(ctx, s.Timeout+grace)
	defer cancel()
	return waitJob(ctx, c, s)
}

func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range job.Status.Conditions {
		if c := &job.Status.Conditions[i]; c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

func waitJob(ctx context.Context, c *kube.Client, s *spec) (outcome, error) {
	w := newWaiter(c, s)
	ref := kube.Ref{Namespace: s.Namespace, Name: s.jobName()}
	podSelector := batchv1.JobNameLabel + "=" + ref.Name
	for {
		job, found, err := c.GetJob(ctx, ref)
		if err != nil && ctx.Err() == nil {
			return outcome{}, err
		}
		if err == nil && !found {
			return outcome{}, fmt.Errorf("the warm-up Job %s was deleted while it ran (after %s)", ref, w.elapsed())
		}
		if job != nil {
			if jobCondition(job, batchv1.JobComplete) != nil {
				pods, _ := c.PodsMatching(ctx, s.Namespace, podSelector)
				o := sizeOf(pods, containerFinalize)
				tflog.Info(ctx, fmt.Sprintf("%s: warm in %s%s", w.what, w.elapsed(), withPrefix("; ", o.String())))
				return o, nil
			}
			if cond := jobCondition(job, batchv1.JobFailed); cond != nil {
				return outcome{}, w.jobFailure(ctx, job, cond, podSelector)
			}
		}
		if ctx.Err() != nil {
			return outcome{}, w.timeout(ctx, s.Namespace, job, podSelector)
		}
		if w.due() {
			pods, _ := c.PodsMatching(ctx, s.Namespace, podSelector)
			pod := newest(pods)
			attempt := ""
			if job != nil && job.Status.Failed > 0 {
				attempt = fmt.Sprintf(", attempt %d of %d", job.Status.Failed+1, s.BackoffLimit+1)
			}
			tflog.Info(ctx, fmt.Sprintf("%s: warming, %s elapsed%s; %s%s", w.what, w.elapsed(), attempt, podSummary(pod), w.progressOf(ctx, pod)))
		}
		_ = w.sleep(ctx)
	}
}

func withPrefix(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

func newest(pods []corev1.Pod) *corev1.Pod {
	if len(pods) == 0 {
		return nil
	}
	return &pods[len(pods)-1]
}

// sizeOf reads finalize's report from the termination messages of pods.
func sizeOf(pods []corev1.Pod, container string) outcome {
	for i := len(pods) - 1; i >= 0; i-- {
		for _, st := range append(append([]corev1.ContainerStatus{}, pods[i].Status.InitContainerStatuses...), pods[i].Status.ContainerStatuses...) {
			if st.Name == container && st.State.Terminated != nil && st.State.Terminated.ExitCode == 0 {
				if o := parseProgress(st.State.Terminated.Message); o.SizeBytes != nil {
					return o
				}
			}
		}
	}
	return outcome{}
}

// podSummary says where a warm-up pod is: Pending and why, or Running where.
func podSummary(pod *corev1.Pod) string {
	if pod == nil {
		return "no pod yet"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "pod %s %s", pod.Name, pod.Status.Phase)
	if pod.Spec.NodeName != "" {
		fmt.Fprintf(&b, " on node %s", pod.Spec.NodeName)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
			fmt.Fprintf(&b, " (not scheduled: %s)", c.Message)
		}
	}
	for _, st := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if w := st.State.Waiting; w != nil && w.Reason != "" && w.Reason != "PodInitializing" && w.Reason != "ContainerCreating" {
			fmt.Fprintf(&b, "; container %s waiting: %s", st.Name, strings.TrimSpace(w.Reason+" "+w.Message))
		}
	}
	return b.String()
}

// failedContainer is the first container of pod that exited non-zero (or the
// one waiting in a crash loop), described.
func failedContainer(pod *corev1.Pod) (name, description string) {
	for _, st := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		t := st.State.Terminated
		if t == nil && st.LastTerminationState.Terminated != nil && st.LastTerminationState.Terminated.ExitCode != 0 {
			t = st.LastTerminationState.Terminated
		}
		if t != nil && t.ExitCode != 0 {
			d := fmt.Sprintf("container %q exited with code %d", st.Name, t.ExitCode)
			if t.Reason != "" {
				d += " (" + t.Reason + ")"
			}
			if st.RestartCount > 0 {
				d += fmt.Sprintf(" after %d restarts", st.RestartCount)
			}
			if msg := strings.TrimSpace(t.Message); msg != "" {
				d += ":\n" + indent(msg)
			}
			return st.Name, d
		}
	}
	return "", ""
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n")
}

// describePod is a failed pod's story: where it ran, which container failed
// and how, and the end of that container's log (or why it cannot be read).
func (w *waiter) describePod(ctx context.Context, pod *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Pod %s", pod.Name)
	if pod.Spec.NodeName != "" {
		fmt.Fprintf(&b, " (node %s)", pod.Spec.NodeName)
	}
	fmt.Fprintf(&b, " is %s", pod.Status.Phase)
	if pod.Status.Reason != "" || pod.Status.Message != "" {
		fmt.Fprintf(&b, ": %s", strings.TrimSpace(pod.Status.Reason+" "+pod.Status.Message))
	}
	name, desc := failedContainer(pod)
	if desc != "" {
		fmt.Fprintf(&b, "; %s", desc)
	}
	if name == "" {
		name = containerDownload
	}
	tail, err := w.client.PodLogTail(ctx, pod.Namespace, pod.Name, name, logLines)
	switch {
	case err != nil:
		fmt.Fprintf(&b, "\nThe log of container %q could not be read: %v.\n"+
			"The API server reads logs from the kubelet of the pod's node: fake (kwok) nodes have none, "+
			"and a real node's may be unreachable or have removed the container. "+
			"The reason and termination message above are what Kubernetes recorded.", name, err)
	case strings.TrimSpace(tail) == "":
		fmt.Fprintf(&b, "\nThe log of container %q is empty.", name)
	default:
		fmt.Fprintf(&b, "\nLast lines of the log of container %q:\n%s", name, indent(tail))
	}
	return b.String()
}

func (w *waiter) jobFailure(ctx context.Context, job *batchv1.Job, cond *batchv1.JobCondition, podSelector string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "The warm-up Job %s/%s failed after %s: %s", job.Namespace, job.Name, w.elapsed(), cond.Reason)
	if cond.Message != "" {
		fmt.Fprintf(&b, ": %s", cond.Message)
	}
	b.WriteString(".")
	pods, err := w.client.PodsMatching(ctx, job.Namespace, podSelector)
	switch {
	case err != nil:
		fmt.Fprintf(&b, "\nIts pods could not be listed: %v", err)
	case len(pods) == 0:
		b.WriteString("\nIts pods are gone, so no container exit or log can be shown.")
	default:
		pod := newest(pods)
		for i := len(pods) - 1; i >= 0; i-- {
			if pods[i].Status.Phase == corev1.PodFailed {
				pod = &pods[i]
				break
			}
		}
		b.WriteString("\n" + w.describePod(ctx, pod))
	}
	return errors.New(b.String())
}

func (w *waiter) timeout(ctx context.Context, namespace string, job *batchv1.Job, podSelector string) error {
	// ctx has ended: read what is left with a fresh one.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	msg := fmt.Sprintf("The warm-up did not finish within %s", w.elapsed())
	if job != nil {
		msg = fmt.Sprintf("The warm-up Job %s/%s did not finish within %s (active %d, failed %d)", job.Namespace, job.Name, w.elapsed(), job.Status.Active, job.Status.Failed)
	}
	pods, _ := w.client.PodsMatching(ctx, namespace, podSelector)
	if pod := newest(pods); pod != nil {
		msg += "; " + podSummary(pod)
	}
	return fmt.Errorf("%w: %s", errTimeout, msg)
}

// warmDaemonSet applies the node_local DaemonSet and waits until every pod
// runs the current template and is Ready (downloader and finalize done).
func warmDaemonSet(ctx context.Context, c *kube.Client, s *spec, keep string, rec *record) (outcome, error) {
	applied := time.Now()
	ds, err := c.ApplyDaemonSet(ctx, s.daemonSet(keep, rec))
	if err != nil {
		return outcome{}, err
	}
	tflog.Info(ctx, fmt.Sprintf("model cache %s: DaemonSet %s applied (revision %s into %s/%s, timeout %s)",
		s.ref(), s.ref(), s.EffectiveRevision, s.HostPath, s.SubPath, s.Timeout))
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	return waitDaemonSet(ctx, c, s, ds.Generation, applied)
}

func daemonSetReady(ds *appsv1.DaemonSet, generation int64) bool {
	st := ds.Status
	return st.ObservedGeneration >= generation &&
		st.UpdatedNumberScheduled == st.DesiredNumberScheduled &&
		st.NumberAvailable == st.DesiredNumberScheduled &&
		st.NumberUnavailable == 0
}

func waitDaemonSet(ctx context.Context, c *kube.Client, s *spec, generation int64, since time.Time) (outcome, error) {
	w := newWaiter(c, s)
	ref := s.ref()
	for {
		ds, found, err := c.GetDaemonSet(ctx, ref)
		if err != nil && ctx.Err() == nil {
			return outcome{}, err
		}
		if err == nil && !found {
			return outcome{}, fmt.Errorf("the DaemonSet %s was deleted while it warmed (after %s)", ref, w.elapsed())
		}
		pods, _ := c.PodsMatching(ctx, s.Namespace, s.selector())
		if failure := w.daemonSetFailure(ctx, s, pods, since); failure != nil {
			return outcome{}, failure
		}
		if ds != nil && daemonSetReady(ds, generation) {
			o := sizeOf(pods, containerFinalize)
			tflog.Info(ctx, fmt.Sprintf("%s: warm on %d nodes in %s%s", w.what, ds.Status.DesiredNumberScheduled, w.elapsed(), withPrefix("; ", o.String())))
			return o, nil
		}
		if ctx.Err() != nil {
			msg := fmt.Sprintf("the DaemonSet %s did not warm every node within %s", ref, w.elapsed())
			if ds != nil {
				msg += fmt.Sprintf(" (%d of %d pods up to date and Ready)", min(ds.Status.UpdatedNumberScheduled, ds.Status.NumberAvailable), ds.Status.DesiredNumberScheduled)
			}
			for i := range pods {
				if !podReady(&pods[i]) {
					msg += "\n  " + podSummary(&pods[i])
				}
			}
			return outcome{}, fmt.Errorf("%w: %s", errTimeout, msg)
		}
		if w.due() && ds != nil {
			var warming *corev1.Pod
			for i := range pods {
				if !podReady(&pods[i]) {
					warming = &pods[i]
				}
			}
			detail := ""
			if warming != nil {
				detail = "; e.g. " + podSummary(warming) + w.progressOf(ctx, warming)
			}
			tflog.Info(ctx, fmt.Sprintf("%s: warming, %s elapsed; %d of %d nodes warm%s", w.what, w.elapsed(),
				min(ds.Status.UpdatedNumberScheduled, ds.Status.NumberAvailable), ds.Status.DesiredNumberScheduled, detail))
		}
		_ = w.sleep(ctx)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// daemonSetFailure: a pod whose downloader or finalize failed more than
// backoff_limit times (a crash loop), or a pod that failed outright, which
// the DaemonSet controller deletes at once (so its FailedDaemonPod event
// may be all that is left of it).
func (w *waiter) daemonSetFailure(ctx context.Context, s *spec, pods []corev1.Pod, since time.Time) error {
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase == corev1.PodFailed {
			if name, _ := failedContainer(p); name != "" {
				return fmt.Errorf("A warm-up pod of the DaemonSet %s failed after %s.\n%s", s.ref(), w.elapsed(), w.describePod(ctx, p))
			}
		}
		for _, st := range p.Status.InitContainerStatuses {
			t := st.LastTerminationState.Terminated
			if int64(st.RestartCount) > s.BackoffLimit && t != nil && t.ExitCode != 0 {
				return fmt.Errorf("A warm-up pod of the DaemonSet %s failed %d times (backoff_limit %d) after %s.\n%s",
					s.ref(), st.RestartCount, s.BackoffLimit, w.elapsed(), w.describePod(ctx, p))
			}
		}
	}
	events, err := w.client.EventsFor(ctx, s.Namespace, "DaemonSet", s.Name, "FailedDaemonPod")
	if err != nil {
		return nil
	}
	cutoff := since.Truncate(time.Second)
	var count int32
	var last string
	for _, e := range events {
		at := e.LastTimestamp.Time
		if e.Series != nil {
			at = e.Series.LastObservedTime.Time
		}
		if at.IsZero() {
			at = e.EventTime.Time
		}
		if at.Before(cutoff) {
			continue
		}
		count += max(e.Count, 1)
		last = e.Message
	}
	if int64(count) > s.BackoffLimit {
		return fmt.Errorf("warm-up pods of the DaemonSet %s failed %d times (backoff_limit %d) after %s; the DaemonSet controller replaced them: %s.\n"+
			"The failed pods are gone, so their exit and log cannot be shown; on a real node, the replacement's crash loop shows them.",
			s.ref(), count, s.BackoffLimit, w.elapsed(), last)
	}
	return nil
}
