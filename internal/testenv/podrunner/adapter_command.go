package podrunner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
)

// Command is a container testenv is told to run by its own command line, as
// a local process (testenv's Options.Commands): the container named Container
// (any, when "") of pods whose image matches Image. It is for test images
// whose command is a program on this machine (`cat <file>` printing a
// recorded log); testenv runs no image it is not told to. The process runs
// once, with the container's literal env values; its stdout and stderr are
// the container's log (served by the runner's kubelet log endpoint) and its
// exit code the container's: the pod Succeeds or Fails as a kubelet with
// restartPolicy Never would report it. The pod's other containers are
// reported terminated with it.
//
// Play, when set, is a recorded log the container plays when its own
// program is not on this machine (an image's mpirun): its output is the
// file's content and it exits 0. That is how a detached cluster (`testenv up
// --nccl-log FILE`) runs an aiplatform_nccl_check's default command. A
// missing Play file fails the container, saying where to put one.
type Command struct {
	Image     *regexp.Regexp
	Container string
	Play      string
}

// adapter is the pod adapter that runs the command.
func (c Command) adapter() *Adapter {
	return &Adapter{Name: "command", Image: c.Image, Container: c.Container, Prepare: c.prepare, runsCommand: true}
}

func (c Command) prepare(lp *localPod) error {
	ctr := lp.container
	argv := append(slices.Clone(ctr.Command), ctr.Args...)
	if len(argv) == 0 && c.Play == "" {
		return fmt.Errorf("container %s has no command: the runner does not know the image's entrypoint", ctr.Name)
	}
	var bin string
	var err error
	if len(argv) > 0 {
		bin, err = exec.LookPath(argv[0])
	}
	if (len(argv) == 0 || err != nil) && c.Play != "" {
		if _, statErr := os.Stat(c.Play); statErr != nil {
			return fmt.Errorf("container %s: no log to play in its place (%v): put one there, e.g. nccl-tests' all_reduce_perf output", ctr.Name, statErr)
		}
		cat, catErr := exec.LookPath("cat")
		if catErr != nil {
			return catErr
		}
		lp.logf("container %s: playing %s as its output (its command %q is not a program here)", ctr.Name, c.Play, argv)
		lp.bin, lp.args = cat, []string{c.Play}
		return nil
	}
	if err != nil {
		return fmt.Errorf("container %s's command %s: %w", ctr.Name, argv[0], err)
	}
	for _, e := range ctr.Env {
		if e.ValueFrom != nil {
			lp.logf("env %s: only literal values are passed (valueFrom ignored)", e.Name)
			continue
		}
		lp.env = append(lp.env, e.Name+"="+e.Value)
	}
	lp.bin, lp.args = bin, argv[1:]
	return nil
}

// runCommand runs the container's command once and reports how it ended.
func (lp *localPod) runCommand(ctx context.Context) {
	p, err := process.StartOutput("pod "+lp.key(), lp.bin, lp.args, lp.dir+".log", lp.env...)
	if err != nil {
		lp.logf("%v", err)
		lp.setStatus(ctx, nil, false, err.Error())
		return
	}
	started := metav1.Now()
	lp.mu.Lock()
	lp.proc = p
	lp.mu.Unlock()
	select {
	case <-ctx.Done():
		p.Stop()
		return
	case <-p.Done():
	}
	code := 0
	if err := p.Err(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			lp.logf("waiting for its command: %v", err)
		}
		code = 1
		if exit != nil && exit.ExitCode() > 0 {
			code = exit.ExitCode()
		}
	}
	lp.logf("command exited with code %d", code)
	lp.setTerminated(ctx, started, int32(code))
}

// setTerminated writes the status of a pod whose command exited with code:
// Succeeded with 0, else Failed, every container terminated.
func (lp *localPod) setTerminated(ctx context.Context, started metav1.Time, code int32) {
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
		st.Phase, st.HostIP, st.HostIPs = corev1.PodSucceeded, "127.0.0.1", []corev1.HostIP{{IP: "127.0.0.1"}}
		reason := "Completed"
		if code != 0 {
			st.Phase, reason = corev1.PodFailed, "Error"
		}
		if st.StartTime == nil {
			st.StartTime = &started
		}
		setCondition(st, corev1.PodInitialized, corev1.ConditionTrue, now)
		setCondition(st, corev1.ContainersReady, corev1.ConditionFalse, now)
		setCondition(st, corev1.PodReady, corev1.ConditionFalse, now)
		st.ContainerStatuses = nil
		for _, c := range pod.Spec.Containers {
			cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image, Started: ptr.To(false)}
			t := &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: started, FinishedAt: now}
			if c.Name == lp.container.Name {
				t.ExitCode, t.Reason = code, reason
			}
			cs.State.Terminated = t
			st.ContainerStatuses = append(st.ContainerStatuses, cs)
		}
		_, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
	if err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) {
		lp.logf("updating its status: %v", err)
	}
}
