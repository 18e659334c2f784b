package podrunner

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
)

// localPod is one pod the runner runs.
type localPod struct {
	runner    *podRunner
	adapter   *Adapter
	container *corev1.Container
	dir       string

	// Set by project and the adapter's prepare before the first start.
	mounts   map[string]string // container mount path → local path
	bin      string            // a Command's program (else the adapter's binary)
	args     []string
	env      []string         // KEY=VALUE over the runner's environment
	ports    map[int32]int    // container port → loopback port
	unserved map[int32]string // container ports not served, and why

	ctx    context.Context // the pod's: ends when it is deleted or the runner stops
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	pod     *corev1.Pod
	proc    *process.Proc
	ready   bool
	tokenAt time.Time // when the token file expires (refreshed at 80%)
}

func (lp *localPod) key() string {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return lp.pod.Namespace + "/" + lp.pod.Name
}

func (lp *localPod) uid() types.UID {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return lp.pod.UID
}

func (lp *localPod) setPod(pod *corev1.Pod) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	lp.pod = pod.DeepCopy()
}

func (lp *localPod) state() (pod *corev1.Pod, ready, running bool) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return lp.pod, lp.ready, lp.proc != nil && !lp.proc.Exited()
}

func (lp *localPod) stop() {
	lp.cancel()
	<-lp.done
}

// targetPort is the loopback port serving a Service's targetPort on this pod.
func (lp *localPod) targetPort(target intstr.IntOrString, servicePort int32) (int, error) {
	var port int32
	switch {
	case target.Type == intstr.String && target.StrVal != "":
		for _, p := range lp.container.Ports {
			if p.Name == target.StrVal {
				port = p.ContainerPort
			}
		}
		if port == 0 {
			return 0, fmt.Errorf("container %s has no port named %q", lp.container.Name, target.StrVal)
		}
	case target.IntVal != 0:
		port = target.IntVal
	default:
		port = servicePort
	}
	if local, ok := lp.ports[port]; ok {
		return local, nil
	}
	if why, ok := lp.unserved[port]; ok {
		return 0, fmt.Errorf("container port %d is not served: %s", port, why)
	}
	return 0, fmt.Errorf("container port %d is not served (the %s adapter maps no such port)", port, lp.adapter.Name)
}

// localPath maps a path in the container to the projected file or directory.
func (lp *localPod) localPath(path string) (string, bool) {
	best := ""
	for mount := range lp.mounts {
		if (path == mount || strings.HasPrefix(path, strings.TrimSuffix(mount, "/")+"/")) && len(mount) > len(best) {
			best = mount
		}
	}
	if best == "" {
		return "", false
	}
	return filepath.Join(lp.mounts[best], strings.TrimPrefix(path, best)), true
}

func (lp *localPod) logf(format string, args ...any) {
	lp.runner.logf("pod runner: %s: "+format, append([]any{lp.key()}, args...)...)
}

// run projects the volumes, prepares the command line and keeps the process
// running until ctx ends, then stops it.
func (lp *localPod) run(ctx context.Context) {
	defer close(lp.done)
	for first := true; ; first = false {
		err := lp.project(ctx)
		if err == nil {
			break
		}
		if first {
			lp.logf("waiting for its volumes: %v", err)
		}
		if sleep(ctx, time.Second); ctx.Err() != nil {
			return
		}
	}
	var bin string
	if !lp.adapter.runsCommand {
		var err error
		if bin, err = lp.build(ctx); err != nil {
			if ctx.Err() == nil {
				lp.logf("cannot run it: %v", err)
				lp.setStatus(ctx, nil, false, fmt.Sprintf("testenv pod runner: %v", err))
			}
			return
		}
	}
	if lock := lp.adapter.Exclusive; lock != "" {
		release, err := process.MachineLock(ctx, lock, func(m string) {
			lp.logf("%s", m)
			lp.setStatus(ctx, nil, false, "testenv pod runner: "+m)
		})
		if err != nil {
			if ctx.Err() == nil {
				lp.logf("cannot run it: %v", err)
				lp.setStatus(ctx, nil, false, fmt.Sprintf("testenv pod runner: %v", err))
			}
			return
		}
		defer release()
	}
	if err := lp.adapter.Prepare(lp); err != nil {
		lp.logf("cannot run it: %v", err)
		lp.setStatus(ctx, nil, false, fmt.Sprintf("testenv pod runner: %v", err))
		return
	}
	go lp.syncVolumes(ctx)
	if lp.adapter.runsCommand {
		lp.runCommand(ctx)
		return
	}

	logPath := lp.dir + ".log"
	backoff := time.Second
	lastTail := ""
	for restarts := int32(0); ctx.Err() == nil; restarts++ {
		p, err := process.Start("pod "+lp.key(), bin, lp.args, logPath, false, lp.env...)
		if err != nil {
			lp.logf("%v", err)
			lp.setStatus(ctx, nil, false, err.Error())
			return
		}
		started := time.Now()
		lp.mu.Lock()
		lp.proc, lp.ready = p, false
		lp.mu.Unlock()
		lp.setStatus(ctx, &restarts, false, "")
		lp.probe(ctx, p, &restarts)
		if ctx.Err() != nil {
			p.Stop()
			return
		}
		// The log's last lines say why, in the test's own output: the pod's
		// directory goes when the cluster stops (a CI log keeps only this).
		// Printed again only when they change.
		msg := fmt.Sprintf("process %d exited (%v) after %s; restarting (log %s)", p.PID, p.Err(), time.Since(started).Round(time.Second), logPath)
		if tail, _ := process.TailFile(logPath, 6, 400); strings.TrimSpace(tail) != "" && tail != lastTail {
			msg += "; its last lines:\n    " + strings.ReplaceAll(tail, "\n", "\n    ")
			lastTail = tail
		}
		lp.logf("%s", msg)
		lp.mu.Lock()
		lp.ready = false
		lp.mu.Unlock()
		lp.setStatus(ctx, &restarts, false, fmt.Sprintf("exited: %v", p.Err()))
		if time.Since(started) > time.Minute {
			backoff = time.Second
		}
		sleep(ctx, backoff)
		backoff = min(2*backoff, 30*time.Second)
	}
}

// building starts the message of a pod waiting for its binary's build (its
// container waits with reason ContainerCreating, see setStatus).
const building = "testenv pod runner: building "

// build returns the binary that runs the pod, waiting for its build when it
// is not in the cache yet: the pod is not Ready meanwhile and says why.
func (lp *localPod) build(ctx context.Context) (string, error) {
	s, err := lp.adapter.spec(lp.container)
	if err != nil {
		return "", err
	}
	if a := lp.adapter; len(a.Alternates) > 0 && a.versionOf(lp.container.Image) == "" {
		var vs []string
		for _, v := range a.versions() {
			vs = append(vs, v.Version)
		}
		lp.logf("image %s names no %s version testenv builds (%s): running %s", lp.container.Image, a.Name, strings.Join(vs, ", "), s.Version)
	}
	if !binaries.Built(s) {
		cold := s.ColdBuild
		if cold == "" {
			cold = "a few minutes"
		}
		lp.logf("waits for its binary: building the %s controller %s, cold ≈ %s", lp.adapter.Name, s.Version, cold)
		lp.setStatus(ctx, nil, false, fmt.Sprintf("%s%s %s for this pod (cold ≈ %s); it starts once built", building, s.Name, s.Version, cold))
	}
	return lp.runner.binary(ctx, s, "pod "+lp.key())
}

// probe follows the container's readinessProbe (its port moved) until the
// process exits or ctx ends, updating the pod's Ready condition.
func (lp *localPod) probe(ctx context.Context, p *process.Proc, restarts *int32) {
	url := lp.readinessURL()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // as the kubelet's probes
	}}
	grpcAddr, grpcService := lp.readinessGRPC()
	for {
		ready := true
		switch {
		case url != "":
			resp, err := client.Get(url)
			ready = err == nil && resp.StatusCode >= 200 && resp.StatusCode < 400
			if err == nil {
				resp.Body.Close()
			}
		case grpcAddr != "":
			ready = grpcServing(ctx, grpcAddr, grpcService)
		}
		lp.mu.Lock()
		changed := lp.ready != ready
		lp.ready = ready
		lp.mu.Unlock()
		if changed {
			lp.setStatus(ctx, restarts, ready, "")
			if ready {
				lp.logf("Ready (process %d)", p.PID)
			}
		}
		period := 500 * time.Millisecond
		if ready {
			period = 2 * time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-p.Done():
			return
		case <-time.After(period):
		}
	}
}

// readinessURL is the container's HTTP readinessProbe on its moved port, ""
// when it has none (then it is Ready once running).
func (lp *localPod) readinessURL() string {
	probe := lp.container.ReadinessProbe
	if probe == nil || probe.HTTPGet == nil {
		return ""
	}
	port, err := lp.targetPort(probe.HTTPGet.Port, 0)
	if err != nil {
		lp.logf("readinessProbe: %v; Ready once running", err)
		return ""
	}
	scheme := strings.ToLower(string(probe.HTTPGet.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	return fmt.Sprintf("%s://127.0.0.1:%d%s", scheme, port, probe.HTTPGet.Path)
}
