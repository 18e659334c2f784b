// Package podrunner runs the real controllers of installed charts in a
// cluster without a kubelet. The pod runner (testenv's Options.PodRunner) is
// the kubelet of a kwok cluster for the few pods whose controller testenv can
// run for real. It watches pods bound to
// nodes; for a pod with a container whose image a registered Adapter
// matches, it does what a kubelet would, on loopback:
//
//   - projects the container's volumes into <Dir>/pods/<namespace>_<name>/:
//     ConfigMaps and Secrets (kept in sync, as the kubelet does, so a Secret a
//     cert rotator fills in later appears as files), emptyDirs, and the service
//     account token (a TokenRequest bound to the pod; the process talks to the
//     API server with it, so the chart's own RBAC is what it gets);
//   - lets the adapter turn the container's command line into a local one,
//     moving only what would collide on one machine (listening ports to free
//     loopback ports, fixed paths to the projected files);
//   - runs the binary testenv built for that image, restarting it when it
//     exits, and stops it by PID when the pod goes away and in Env.Stop. The
//     binary is built when the first pod of its image is to run (when a test
//     did not ask for it up front): the pod waits, not Ready, its container
//     waiting with reason ContainerCreating and the build in its message,
//     while other adapters' pods run;
//   - owns the pod's status: Running once started, Ready when the container's
//     readinessProbe (its port moved) answers. kwok's pod-ready stage leaves
//     these pods alone (package nodes), so a Deployment is Available only
//     when the real process is ready.
//
// The egress proxy (egress.go) asks the runner which loopback port serves a
// Service's targetPort.
package podrunner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
)

// podRunner runs the pods some adapter matches; see the top of this file.
type podRunner struct {
	client   kubernetes.Interface
	host     string
	ca       []byte
	dir      string // <Dir>/pods
	adapters []*Adapter
	logf     func(string, ...any)

	ctx    context.Context // the runner's: ends the builds in stop
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	pods   map[types.UID]*localPod
	builds map[string]*buildCall // by binaries.Spec.Key
}

// buildCall is one build of a binary that pods wait for.
type buildCall struct {
	done chan struct{}
	path string
	err  error
}

func newPodRunner(client kubernetes.Interface, host string, ca []byte, envDir string, adapters []*Adapter, cmds []Command, logf func(string, ...any)) *podRunner {
	return &podRunner{
		client: client, host: host, ca: ca, dir: filepath.Join(envDir, "pods"),
		adapters: withCommands(adapters, cmds), logf: logf, pods: map[types.UID]*localPod{},
		builds: map[string]*buildCall{},
	}
}

func (r *podRunner) start() {
	_ = os.RemoveAll(r.dir) // pods of an earlier cluster in this directory
	ctx, cancel := context.WithCancel(context.Background())
	r.ctx, r.cancel, r.done = ctx, cancel, make(chan struct{})
	go func() {
		defer close(r.done)
		r.watch(ctx)
	}()
}

// stop stops watching and every process, each by its PID.
func (r *podRunner) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
	r.mu.Lock()
	pods := slices.Collect(maps.Values(r.pods))
	r.pods = map[types.UID]*localPod{}
	r.mu.Unlock()
	for _, lp := range pods {
		lp.stop()
	}
}

// watch lists and watches pods until ctx ends, relisting when a watch ends.
func (r *podRunner) watch(ctx context.Context) {
	pods := r.client.CoreV1().Pods("")
	for ctx.Err() == nil {
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		seen := map[types.UID]bool{}
		for i := range list.Items {
			seen[list.Items[i].UID] = true
			r.handle(&list.Items[i], false)
		}
		r.mu.Lock()
		var gone []*localPod
		for uid, lp := range r.pods {
			if !seen[uid] {
				gone = append(gone, lp)
			}
		}
		r.mu.Unlock()
		for _, lp := range gone {
			r.forget(lp)
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				break // an error event: relist
			}
			if ev.Type != watch.Bookmark {
				r.handle(pod, ev.Type == watch.Deleted)
			}
		}
		w.Stop()
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// handle starts, updates or stops the local process of a pod.
func (r *podRunner) handle(pod *corev1.Pod, deleted bool) {
	r.mu.Lock()
	lp := r.pods[pod.UID]
	r.mu.Unlock()
	finished := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if deleted || pod.DeletionTimestamp != nil || finished {
		if lp != nil {
			r.forget(lp)
		}
		return
	}
	if lp != nil {
		lp.setPod(pod)
		return
	}
	if pod.Spec.NodeName == "" {
		return
	}
	for _, a := range r.adapters {
		for i := range pod.Spec.Containers {
			if a.takes(&pod.Spec.Containers[i]) {
				r.run(pod, a, i)
				return
			}
		}
	}
}

func (r *podRunner) run(pod *corev1.Pod, a *Adapter, container int) {
	ctx, cancel := context.WithCancel(context.Background())
	lp := &localPod{
		runner: r, adapter: a, pod: pod.DeepCopy(), container: pod.Spec.Containers[container].DeepCopy(),
		dir:    filepath.Join(r.dir, pod.Namespace+"_"+pod.Name),
		mounts: map[string]string{}, ports: map[int32]int{}, unserved: map[int32]string{},
		ctx: ctx, cancel: cancel, done: make(chan struct{}),
	}
	r.mu.Lock()
	r.pods[pod.UID] = lp
	r.mu.Unlock()
	r.logf("pod runner: running pod %s/%s (container %s, image %s) with the %s adapter", pod.Namespace, pod.Name, lp.container.Name, lp.container.Image, a.Name)
	go lp.run(ctx)
}

// binary is the path of s, built first when it is not in the cache: once
// for every pod that waits for it (a failed build is tried again by the next
// pod), in the runner's context, so a pod that goes away does not cancel the
// build its replacement needs. The wait ends with ctx (the pod's).
func (r *podRunner) binary(ctx context.Context, s binaries.Spec, purpose string) (string, error) {
	if p, err := binaries.Path(s); err != nil || binaries.Built(s) {
		return p, err
	}
	r.mu.Lock()
	b := r.builds[s.Key()]
	if b == nil {
		b = &buildCall{done: make(chan struct{})}
		r.builds[s.Key()] = b
		go func() {
			paths, err := binaries.EnsureFor(r.ctx, logWriter(r.logf), purpose, s)
			b.path, b.err = paths[s.Key()], err
			if err != nil {
				r.mu.Lock()
				delete(r.builds, s.Key())
				r.mu.Unlock()
			}
			close(b.done)
		}()
	}
	r.mu.Unlock()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case <-b.done:
		return b.path, b.err
	}
}

// logWriter writes lines (package binaries' progress) to logf.
type logWriter func(string, ...any)

func (w logWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		w("%s", strings.TrimPrefix(line, "testenv: "))
	}
	return len(p), nil
}

func (r *podRunner) forget(lp *localPod) {
	r.mu.Lock()
	delete(r.pods, lp.uid())
	r.mu.Unlock()
	lp.stop()
	r.logf("pod runner: pod %s stopped", lp.key())
}

// backend is the loopback address of a pod that serves a Service port: the
// pods the runner runs in the Service's namespace whose labels match its
// selector, Ready ones first (a running but not yet Ready pod is used when
// none is Ready: the API server may need a webhook of the very process that
// is getting ready).
func (r *podRunner) backend(svc *corev1.Service, sp corev1.ServicePort) (string, error) {
	if len(svc.Spec.Selector) == 0 {
		return "", errors.New("the Service has no selector")
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	r.mu.Lock()
	pods := slices.Collect(maps.Values(r.pods))
	r.mu.Unlock()
	slices.SortFunc(pods, func(a, b *localPod) int { return strings.Compare(a.key(), b.key()) })
	var fallback string
	var reasons []string
	for _, lp := range pods {
		pod, ready, running := lp.state()
		if pod.Namespace != svc.Namespace || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		if !running { // (ports are set before the process starts)
			reasons = append(reasons, fmt.Sprintf("pod %s: its process is not running", lp.key()))
			continue
		}
		port, err := lp.targetPort(sp.TargetPort, sp.Port)
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("pod %s: %v", lp.key(), err))
			continue
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if ready {
			return addr, nil
		}
		if fallback == "" {
			fallback = addr
		}
	}
	if fallback != "" {
		return fallback, nil
	}
	if len(reasons) == 0 {
		return "", fmt.Errorf("no pod run by testenv's pod runner matches the selector %s", sel)
	}
	return "", errors.New(strings.Join(reasons, "; "))
}

// processes lists the running processes of the pods, sorted by name.
func (r *podRunner) processes() []process.Process {
	r.mu.Lock()
	pods := slices.Collect(maps.Values(r.pods))
	r.mu.Unlock()
	var out []process.Process
	for _, lp := range pods {
		lp.mu.Lock()
		if lp.proc != nil && !lp.proc.Exited() {
			out = append(out, lp.proc.Process)
		}
		lp.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b process.Process) int { return strings.Compare(a.Name, b.Name) })
	return out
}
