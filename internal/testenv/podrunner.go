package testenv

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// The pod runner (Options.PodRunner) is the kubelet of a kwok cluster for the
// few pods whose controller testenv can run for real. It watches pods bound to
// nodes; for a pod with a container whose image a registered podAdapter
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
//     exits, and stops it by PID when the pod goes away and in Env.Stop;
//   - owns the pod's status: Running once started, Ready when the container's
//     readinessProbe (its port moved) answers. kwok's pod-ready stage leaves
//     these pods alone (writeKwokConfig), so a Deployment is Available only
//     when the real process is ready.
//
// The egress proxy (egress.go) asks the runner which loopback port serves a
// Service's targetPort.

// podAdapter runs the controller of one container image as a local process.
// One adapter per controller image: Kueue (podrunner_kueue.go), LWS
// (podrunner_lws.go), KubeRay (podrunner_kuberay.go); each is an image
// pattern, a binary, a prepare function.
type podAdapter struct {
	name      string
	component Component      // the binary, from Env.Binaries
	image     *regexp.Regexp // matches the container's image
	// prepare sets lp.args and lp.ports from lp.container and the projected
	// volumes (lp.localPath), allocating loopback ports with freePorts. It
	// runs once per pod, before the first start.
	prepare func(lp *localPod) error
}

// podAdapters are the registered adapters; the runner uses those whose binary
// it has.
var podAdapters = []*podAdapter{kueueAdapter, lwsAdapter, kubeRayAdapter}

// runnerImagePattern is a regular expression matching the images the pod
// runner takes over (for kwok's pod-ready stage to leave alone), or "" when
// the cluster has no pod runner.
func (e *Env) runnerImagePattern() string {
	if !e.opts.PodRunner {
		return ""
	}
	var alts []string
	for _, a := range activeAdapters(e.Binaries) {
		alts = append(alts, "(?:"+a.image.String()+")")
	}
	return strings.Join(alts, "|")
}

func activeAdapters(bins Binaries) []*podAdapter {
	var out []*podAdapter
	for _, a := range podAdapters {
		if bins[a.component] != "" {
			out = append(out, a)
		}
	}
	return out
}

// localNet is what Options.Egress and Options.PodRunner run inside the
// process that called Start.
type localNet struct {
	egress    *egressProxy
	egressLog *os.File
	backends  *lateBackends
	runner    *podRunner
}

// stopNet stops the pod runner's processes and the egress proxy.
func (e *Env) stopNet() {
	if e.net.runner != nil {
		e.net.runner.stop()
	}
	if e.net.egress != nil {
		e.net.egress.close()
	}
	if e.net.egressLog != nil {
		_ = e.net.egressLog.Close()
	}
}

// Agent is the process that serves the egress socket and runs the
// pod runner for a detached cluster (`testenv up`), which outlives the
// process that called Start: the calling program itself, run as
// `<program> agent <dir>`, which must call RunAgent (cmd/testenv does).
const Agent Component = "testenv-agent"

// startPodRunner starts the pod runner (Options.PodRunner): in this process,
// or for a detached cluster as the agent process.
func (e *Env) startPodRunner(ctx context.Context) error {
	if !e.opts.PodRunner {
		return nil
	}
	if e.opts.Detach {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		e.Binaries[Agent] = self
		p, err := e.start(Agent, []string{"agent", e.Dir})
		if err != nil {
			return err
		}
		select {
		case <-p.done:
			return fmt.Errorf("testenv: %s exited (%v)\n%s", Agent, p.err, logTail(e.LogPath(Agent)))
		case <-time.After(time.Second):
		}
		e.logf("egress proxy and pod runner running as %s (pid %d)", Agent, p.PID)
		return nil
	}
	r := newPodRunner(e.Client, e.Host, e.CAData, e.Dir, e.Binaries, e.logf)
	r.start()
	e.net.runner = r
	if e.net.backends != nil {
		e.net.backends.set(r)
	}
	names := []string{}
	for _, a := range r.adapters {
		names = append(names, a.name)
	}
	e.logf("pod runner running (adapters: %s)", strings.Join(names, ", "))
	return nil
}

// RunAgent serves the egress proxy and the pod runner of the detached cluster
// in dir until ctx ends, then stops the processes it started. `testenv agent
// <dir>` calls it; Start starts that for Options.Detach with PodRunner.
func RunAgent(ctx context.Context, dir string, log io.Writer) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 100, 200
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var components []Component
	for _, a := range podAdapters {
		components = append(components, a.component)
	}
	bins, err := EnsureBinaries(ctx, log, components...)
	if err != nil {
		return err
	}
	logf := func(format string, args ...any) { fmt.Fprintf(log, "testenv agent: "+format+"\n", args...) }
	r := newPodRunner(client, cfg.Host, cfg.CAData, dir, bins, logf)
	logFile, err := os.OpenFile(filepath.Join(dir, egressLogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	p, err := startEgressProxy(filepath.Join(dir, egressSocketFile), client, r, logf, &syncWriter{w: logFile})
	if err != nil {
		return err
	}
	r.start()
	logf("serving %s and running pods", filepath.Join(dir, egressSocketFile))
	<-ctx.Done()
	r.stop()
	p.close()
	logf("stopped")
	return nil
}

// podRunner runs the pods some adapter matches; see the top of this file.
type podRunner struct {
	client   kubernetes.Interface
	host     string
	ca       []byte
	dir      string // <Dir>/pods
	bins     Binaries
	adapters []*podAdapter
	logf     func(string, ...any)

	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	pods map[types.UID]*localPod
}

func newPodRunner(client kubernetes.Interface, host string, ca []byte, envDir string, bins Binaries, logf func(string, ...any)) *podRunner {
	return &podRunner{
		client: client, host: host, ca: ca, dir: filepath.Join(envDir, "pods"), bins: bins,
		adapters: activeAdapters(bins), logf: logf, pods: map[types.UID]*localPod{},
	}
}

func (r *podRunner) start() {
	_ = os.RemoveAll(r.dir) // pods of an earlier cluster in this directory
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
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
			if a.image.MatchString(pod.Spec.Containers[i].Image) {
				r.run(pod, a, i)
				return
			}
		}
	}
}

func (r *podRunner) run(pod *corev1.Pod, a *podAdapter, container int) {
	ctx, cancel := context.WithCancel(context.Background())
	lp := &localPod{
		runner: r, adapter: a, pod: pod.DeepCopy(), container: pod.Spec.Containers[container].DeepCopy(),
		dir:    filepath.Join(r.dir, pod.Namespace+"_"+pod.Name),
		mounts: map[string]string{}, ports: map[int32]int{}, unserved: map[int32]string{},
		cancel: cancel, done: make(chan struct{}),
	}
	r.mu.Lock()
	r.pods[pod.UID] = lp
	r.mu.Unlock()
	r.logf("pod runner: running pod %s/%s (container %s, image %s) with the %s adapter", pod.Namespace, pod.Name, lp.container.Name, lp.container.Image, a.name)
	go lp.run(ctx)
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

// localPod is one pod the runner runs.
type localPod struct {
	runner    *podRunner
	adapter   *podAdapter
	container *corev1.Container
	dir       string

	// Set by project and the adapter's prepare before the first start.
	mounts   map[string]string // container mount path → local path
	args     []string
	ports    map[int32]int    // container port → loopback port
	unserved map[int32]string // container ports not served, and why

	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	pod     *corev1.Pod
	proc    *process
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
	return lp.pod, lp.ready, lp.proc != nil && !lp.proc.exited()
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
	return 0, fmt.Errorf("container port %d is not served (the %s adapter maps no such port)", port, lp.adapter.name)
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
	if err := lp.adapter.prepare(lp); err != nil {
		lp.logf("cannot run it: %v", err)
		lp.setStatus(ctx, nil, false, fmt.Sprintf("testenv pod runner: %v", err))
		return
	}
	go lp.syncVolumes(ctx)

	bin := lp.runner.bins[lp.adapter.component]
	logPath := lp.dir + ".log"
	backoff := time.Second
	for restarts := int32(0); ctx.Err() == nil; restarts++ {
		p, err := startProcess("pod "+lp.key(), bin, lp.args, logPath, false)
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
			p.stop()
			return
		}
		lp.logf("process %d exited (%v) after %s; restarting (log %s)", p.PID, p.err, time.Since(started).Round(time.Second), logPath)
		lp.mu.Lock()
		lp.ready = false
		lp.mu.Unlock()
		lp.setStatus(ctx, &restarts, false, fmt.Sprintf("exited: %v", p.err))
		if time.Since(started) > time.Minute {
			backoff = time.Second
		}
		sleep(ctx, backoff)
		backoff = min(2*backoff, 30*time.Second)
	}
}

// probe follows the container's readinessProbe (its port moved) until the
// process exits or ctx ends, updating the pod's Ready condition.
func (lp *localPod) probe(ctx context.Context, p *process, restarts *int32) {
	url := lp.readinessURL()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // as the kubelet's probes
	}}
	for {
		ready := true
		if url != "" {
			resp, err := client.Get(url)
			ready = err == nil && resp.StatusCode >= 200 && resp.StatusCode < 400
			if err == nil {
				resp.Body.Close()
			}
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
		case <-p.done:
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
				cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CreateContainerError", Message: message}
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

// syncVolumes re-projects the volumes every second, as the kubelet refreshes
// Secret and ConfigMap volumes, until ctx ends.
func (lp *localPod) syncVolumes(ctx context.Context) {
	for {
		if sleep(ctx, time.Second); ctx.Err() != nil {
			return
		}
		if err := lp.project(ctx); err != nil && ctx.Err() == nil {
			lp.logf("refreshing its volumes: %v", err)
		}
	}
}

// project writes the container's volumes under lp.dir/volumes and a
// kubeconfig with the pod's service account token (lp.dir/kubeconfig). Files
// are rewritten only when their content changes.
func (lp *localPod) project(ctx context.Context) error {
	lp.mu.Lock()
	pod := lp.pod
	lp.mu.Unlock()
	client := lp.runner.client.CoreV1()
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	for _, m := range lp.container.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			return fmt.Errorf("volume %q not in the pod", m.Name)
		}
		dir := filepath.Join(lp.dir, "volumes", m.Name)
		files := map[string][]byte{}
		switch {
		case v.ConfigMap != nil:
			cm, err := client.ConfigMaps(pod.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil && !(apierrors.IsNotFound(err) && ptr.Deref(v.ConfigMap.Optional, false)) {
				return fmt.Errorf("ConfigMap %s of volume %s: %w", v.ConfigMap.Name, m.Name, err)
			}
			if cm != nil {
				data := maps.Clone(cm.BinaryData)
				if data == nil {
					data = map[string][]byte{}
				}
				for k, s := range cm.Data {
					data[k] = []byte(s)
				}
				files = keyFiles(data, v.ConfigMap.Items)
			}
		case v.Secret != nil:
			s, err := client.Secrets(pod.Namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
			if err != nil && !(apierrors.IsNotFound(err) && ptr.Deref(v.Secret.Optional, false)) {
				return fmt.Errorf("Secret %s of volume %s: %w", v.Secret.SecretName, m.Name, err)
			}
			if s != nil {
				files = keyFiles(s.Data, v.Secret.Items)
			}
		case v.Projected != nil:
			// The service account volume (token, ca.crt, namespace) and
			// the like; the token is the one written for the kubeconfig.
			for _, src := range v.Projected.Sources {
				switch {
				case src.ServiceAccountToken != nil:
					if err := lp.refreshToken(ctx); err != nil {
						return err
					}
					tok, err := os.ReadFile(filepath.Join(lp.dir, "token"))
					if err != nil {
						return err
					}
					files[src.ServiceAccountToken.Path] = tok
				case src.ConfigMap != nil && src.ConfigMap.Name == "kube-root-ca.crt":
					files["ca.crt"] = lp.runner.ca
				case src.DownwardAPI != nil:
					for _, item := range src.DownwardAPI.Items {
						if item.FieldRef != nil && item.FieldRef.FieldPath == "metadata.namespace" {
							files[item.Path] = []byte(pod.Namespace)
						}
					}
				}
			}
		}
		if err := writeFiles(dir, files); err != nil {
			return err
		}
		local := dir
		if m.SubPath != "" {
			local = filepath.Join(dir, m.SubPath)
		}
		lp.mu.Lock()
		lp.mounts[m.MountPath] = local
		lp.mu.Unlock()
	}
	return lp.refreshToken(ctx)
}

// keyFiles is a ConfigMap's or Secret's data as files: every key, or only the
// listed items under their paths.
func keyFiles(data map[string][]byte, items []corev1.KeyToPath) map[string][]byte {
	if len(items) == 0 {
		return data
	}
	out := map[string][]byte{}
	for _, it := range items {
		if d, ok := data[it.Key]; ok {
			out[it.Path] = d
		}
	}
	return out
}

// writeFiles writes files under dir, each atomically and only when changed.
func writeFiles(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, data := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	return nil
}

// refreshToken writes lp.dir/token, a token of the pod's service account
// bound to the pod (so it dies with it), when there is none or it is at 80% of
// its life, and lp.dir/kubeconfig, which reads it.
func (lp *localPod) refreshToken(ctx context.Context) error {
	lp.mu.Lock()
	pod, due := lp.pod, lp.tokenAt
	lp.mu.Unlock()
	if !due.IsZero() && time.Now().Before(due) {
		return nil
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	const life = 24 * time.Hour
	tr, err := lp.runner.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To(int64(life.Seconds())),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token of ServiceAccount %s/%s: %w", pod.Namespace, sa, err)
	}
	tokenFile := filepath.Join(lp.dir, "token")
	if err := writeFiles(lp.dir, map[string][]byte{"token": []byte(tr.Status.Token)}); err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["testenv"] = &clientcmdapi.Cluster{Server: lp.runner.host, CertificateAuthorityData: lp.runner.ca}
	cfg.AuthInfos["pod"] = &clientcmdapi.AuthInfo{TokenFile: tokenFile}
	cfg.Contexts["testenv"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: "pod", Namespace: pod.Namespace}
	cfg.CurrentContext = "testenv"
	if err := clientcmd.WriteToFile(*cfg, filepath.Join(lp.dir, "kubeconfig")); err != nil {
		return err
	}
	lifetime := time.Until(tr.Status.ExpirationTimestamp.Time)
	lp.mu.Lock()
	lp.tokenAt = time.Now().Add(lifetime * 8 / 10)
	lp.mu.Unlock()
	return nil
}

// withoutImages adds to a kwok Stage's selector that no container's image
// matches pattern (a Go regular expression, as gojq's test uses).
func withoutImages(stage []byte, pattern string) ([]byte, error) {
	var obj map[string]any
	if err := yaml.Unmarshal(stage, &obj); err != nil {
		return nil, err
	}
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return nil, errors.New("testenv: kwok stage without spec")
	}
	sel, _ := spec["selector"].(map[string]any)
	if sel == nil {
		sel = map[string]any{}
		spec["selector"] = sel
	}
	quoted, err := json.Marshal(pattern)
	if err != nil {
		return nil, err
	}
	exprs, _ := sel["matchExpressions"].([]any)
	sel["matchExpressions"] = append(exprs, map[string]any{
		"key":      fmt.Sprintf("[.spec.containers[].image | test(%s)] | any", quoted),
		"operator": "NotIn",
		"values":   []any{"true"},
	})
	return yaml.Marshal(obj)
}
