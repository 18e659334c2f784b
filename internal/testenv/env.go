package testenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options says what cluster Start brings up.
type Options struct {
	// Dir holds the cluster's state, certificates, kubeconfig and logs. It is
	// kept after Stop. Empty means a temporary directory, removed by Stop.
	// Stale state from an earlier cluster in Dir is removed first.
	Dir string

	// Scheduling also runs kube-controller-manager, kube-scheduler and kwok, so
	// that Pods are scheduled to (fake) nodes and Jobs run to completion, and a
	// default StorageClass whose claims bind (storage.go). Implied by Nodes.
	Scheduling bool

	// Nodes are kwok-managed fake nodes to create once the cluster is up.
	Nodes []NodePool

	// CRDDirs are directories of CustomResourceDefinition YAML files to apply
	// (create or update), waiting until each CRD is Established.
	CRDDirs []string

	// Kueue also builds the Kueue manager binary (Env.Binaries[Kueue]).
	// It is started only with RunKueue.
	Kueue bool

	// RunKueue runs the Kueue manager as a local process once the cluster is
	// up, so that Kueue admits, holds and preempts Jobs (see StartKueue).
	// Implies Kueue, Scheduling and Kueue's CRDs (KueueCRDDir). With
	// TESTENV_KUBECONFIG nothing is started: the external cluster must run
	// Kueue already, and Start waits until its webhooks answer.
	RunKueue bool

	// KueueFrameworks are the integrations the Kueue manager enables
	// (integrations.frameworks in its configuration), default
	// DefaultKueueFrameworks. Only these frameworks' webhooks are registered.
	KueueFrameworks []string

	// RunKubeRay runs the KubeRay operator (KubeRayVersion) as a local
	// process once the cluster is up, so that RayClusters, RayJobs and
	// RayServices get their pods (see StartKubeRay). Implies Scheduling and
	// KubeRay's CRDs (KubeRayCRDDir), which are in place before the Kueue
	// manager starts (its ray.io integrations need them). With
	// TESTENV_KUBECONFIG nothing is started: Start checks that the external
	// cluster serves RayClusters.
	RunKubeRay bool

	// RunLWS runs the LeaderWorkerSet controller (LWSVersion) as a local
	// process, its webhooks registered by URL on loopback (see StartLWS).
	// Implies Scheduling and the LWS CRD (LWSCRDDir). With TESTENV_KUBECONFIG
	// nothing is started: Start waits until the external cluster's LWS
	// webhooks answer.
	RunLWS bool

	// Controllers overrides kube-controller-manager's --controllers
	// (default DefaultControllers).
	Controllers []string

	// APIServerArgs are appended to kube-apiserver's flags, e.g. an
	// --egress-selector-config-file.
	APIServerArgs []string

	// Egress gives the API server a cluster network (egress.go): its calls to
	// Services (webhooks, aggregated APIs) go through testenv's egress proxy
	// to the local processes of the pod runner.
	Egress bool

	// PodRunner runs the real controller of pods whose image testenv knows
	// (podrunner.go: the managers of Kueue's and LWS's charts, the KubeRay
	// operator) as local processes, with the pod's own configuration and
	// Secrets, and makes the pod Ready when the process is. Implies Egress,
	// Scheduling, and the binaries of Kueue, LWS and KubeRay.
	PodRunner bool

	// Detach starts the processes in their own session, without a parent-death
	// signal, so they outlive this process (`testenv up`), and keeps
	// <Dir>/pids up to date. Requires Dir.
	Detach bool

	// NodeLease is how long kwok's node leases last (kwok renews each at a
	// quarter of it); default 40s. Scale runs with thousands of nodes raise it
	// (the bench uses 10 minutes): at 40s, 5,000 nodes cost 500 lease writes a
	// second, more than one core of an idle 2-core machine.
	// kube-controller-manager's node-monitor grace period follows it.
	NodeLease time.Duration

	// Log receives progress messages; default os.Stderr.
	Log io.Writer

	// Timeout bounds each wait (a component's readiness, nodes Ready, CRDs
	// Established); default 2 minutes. Building binaries is not bounded by it.
	Timeout time.Duration
}

// DefaultControllers are the kube-controller-manager controllers testenv runs:
// enough for Jobs, Deployments and StatefulSets to create pods, for namespaces
// and owned objects to be deleted, and for new nodes to lose the not-ready taint
// (node-lifecycle-controller; without it pods stay Pending).
var DefaultControllers = []string{
	"job-controller",
	"garbage-collector-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"node-lifecycle-controller",
	"namespace-controller",
	"pod-garbage-collector-controller",
	"deployment-controller",
	"replicaset-controller",
	"statefulset-controller",
	"daemonset-controller",
	"root-ca-certificate-publisher-controller",
	"ttl-after-finished-controller",
	// PersistentVolumeClaims bind (with the provisioner of storage.go) and
	// can be deleted (the protection controllers remove their finalizers).
	"persistentvolume-binder-controller",
	"persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller",
}

// Env is a running cluster.
type Env struct {
	Kubeconfig string // kubeconfig file: admin token, CA, context "testenv"
	Host       string // https://127.0.0.1:<port>
	Token      string // admin bearer token (group system:masters)
	CAData     []byte // PEM CA of the API server's serving certificate
	RESTConfig *rest.Config
	Client     kubernetes.Interface
	Dynamic    dynamic.Interface
	Dir        string
	External   bool     // TESTENV_KUBECONFIG: a cluster testenv did not start and cannot stop
	Binaries   Binaries // paths of the binaries in use (empty when External)

	opts      Options
	log       io.Writer
	removeDir bool
	pki       *pki
	ports     ports
	kueue     *kueueLocal // with RunKueue
	net       localNet    // with Egress, PodRunner (egress.go, podrunner.go)

	kuberay *kubeRayLocal // with RunKubeRay
	lws     *lwsLocal     // with RunLWS

	stopStorage context.CancelFunc // the storage provisioner (storage.go)

	mu      sync.Mutex
	procs   []*process // in start order; Stop goes in reverse
	stopped bool
}

type ports struct {
	etcdClient, etcdPeer, apiServer, controllerManager, scheduler int
	kueueWebhook, kueueHealth                                     int
}

// Start brings up a cluster as described by opts, building missing binaries
// first (see EnsureBinaries). When TESTENV_KUBECONFIG is set it starts nothing
// and uses that cluster instead, still creating the requested nodes and CRDs.
// On error everything started so far is stopped.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	if len(opts.Nodes) > 0 {
		opts.Scheduling = true
	}
	if opts.Detach && opts.Dir == "" {
		return nil, errors.New("testenv: Options.Detach needs Options.Dir")
	}
	if path := os.Getenv("TESTENV_KUBECONFIG"); path != "" {
		return startExternal(ctx, path, opts)
	}
	if opts.PodRunner {
		opts.Egress, opts.Scheduling, opts.Kueue = true, true, true
	}
	if opts.RunKueue {
		opts.Kueue, opts.Scheduling = true, true
		crds, err := KueueCRDDir(ctx)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(opts.CRDDirs, crds) {
			opts.CRDDirs = append(slices.Clip(opts.CRDDirs), crds)
		}
	}

	if opts, err = withOperators(ctx, opts); err != nil {
		return nil, err
	}

	components := []Component{Etcd, APIServer}
	if opts.Scheduling {
		components = append(components, ControllerManager, Scheduler, Kwok)
	}
	if opts.Kueue {
		components = append(components, Kueue)
	}
	components = append(components, opts.operators()...)
	if opts.PodRunner { // the binaries of every adapter (podrunner.go)
		for _, a := range podAdapters {
			if !slices.Contains(components, a.component) {
				components = append(components, a.component)
			}
		}
	}
	bins, err := EnsureBinaries(ctx, opts.Log, components...)
	if err != nil {
		return nil, err
	}

	// Free ports are picked before the components bind them, so another
	// process (a parallel test package, an outgoing connection) can take one
	// in between; start again on fresh ports when that happens.
	for attempt := 1; ; attempt++ {
		env, err := startLocal(ctx, opts, bins)
		if errors.Is(err, errPortInUse) && attempt < 3 {
			fmt.Fprintf(opts.Log, "%v; starting again on other ports\n", err)
			continue
		}
		return env, err
	}
}

// errPortInUse marks a start that failed because a component's port was taken.
var errPortInUse = errors.New("port already in use")

// startLocal starts the processes of a local cluster once.
func startLocal(ctx context.Context, opts Options, bins Binaries) (_ *Env, err error) {
	begin := time.Now()
	e := &Env{opts: opts, log: opts.Log, Binaries: bins, Dir: opts.Dir}
	if e.Dir == "" {
		if e.Dir, err = os.MkdirTemp("", "testenv-"); err != nil {
			return nil, err
		}
		e.removeDir = true
	} else {
		if e.Dir, err = filepath.Abs(e.Dir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(e.Dir, 0o755); err != nil {
			return nil, err
		}
		if err := cleanDir(e.Dir); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()

	if e.pki, err = newPKI(e.Dir); err != nil {
		return nil, err
	}
	e.Token, e.CAData = e.pki.token, e.pki.caPEM
	free, err := pickPorts(7)
	if err != nil {
		return nil, err
	}
	e.ports = ports{free[0], free[1], free[2], free[3], free[4], free[5], free[6]}
	e.Host = fmt.Sprintf("https://127.0.0.1:%d", e.ports.apiServer)
	e.Kubeconfig = filepath.Join(e.Dir, "kubeconfig")
	if err := writeKubeconfig(e.Kubeconfig, e.Host, e.CAData, e.Token); err != nil {
		return nil, err
	}
	if err := e.setClients(&rest.Config{
		Host:            e.Host,
		BearerToken:     e.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: e.CAData},
	}); err != nil {
		return nil, err
	}

	if err := e.startEtcd(ctx); err != nil {
		return nil, err
	}
	if err := e.startEgress(); err != nil {
		return nil, err
	}
	if err := e.StartAPIServer(ctx); err != nil {
		return nil, err
	}
	if opts.Scheduling {
		if err := e.startScheduling(ctx); err != nil {
			return nil, err
		}
		if err := e.startStorage(ctx); err != nil {
			return nil, err
		}
		if err := e.startPodRunner(ctx); err != nil {
			return nil, err
		}
	}
	if err := e.setup(ctx); err != nil {
		return nil, err
	}
	if err := e.startOperators(ctx); err != nil {
		return nil, err
	}
	if opts.RunKueue {
		if err := e.prepareKueue(ctx); err != nil {
			return nil, err
		}
		if err := e.StartKueue(ctx); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(e.log, "testenv: cluster ready in %s (kubeconfig %s)\n", time.Since(begin).Round(10*time.Millisecond), e.Kubeconfig)
	return e, nil
}

// setup creates what opts asks for in a running cluster: CRDs, then nodes.
func (e *Env) setup(ctx context.Context) error {
	if len(e.opts.CRDDirs) > 0 {
		t := time.Now()
		if err := e.ApplyCRDs(ctx, e.opts.CRDDirs...); err != nil {
			return err
		}
		e.logf("CRDs established (%s)", time.Since(t).Round(10*time.Millisecond))
	}
	for _, pool := range e.opts.Nodes {
		t := time.Now()
		names, err := e.AddNodes(ctx, pool)
		if err != nil {
			return err
		}
		e.logf("%d %s nodes Ready (%s)", len(names), pool.Name, time.Since(t).Round(10*time.Millisecond))
	}
	return nil
}

func (e *Env) logf(format string, args ...any) {
	fmt.Fprintf(e.log, "testenv: "+format+"\n", args...)
}

// startExternal connects to the cluster of an existing kubeconfig.
func startExternal(ctx context.Context, path string, opts Options) (_ *Env, err error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("testenv: TESTENV_KUBECONFIG=%s: %w", path, err)
	}
	e := &Env{opts: opts, log: opts.Log, External: true, Kubeconfig: path, Host: cfg.Host, Token: cfg.BearerToken, CAData: cfg.CAData, Binaries: Binaries{}}
	if e.Token == "" && cfg.BearerTokenFile != "" {
		tok, err := os.ReadFile(cfg.BearerTokenFile)
		if err != nil {
			return nil, err
		}
		e.Token = string(tok)
	}
	if e.CAData == nil && cfg.CAFile != "" {
		if e.CAData, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, err
		}
	}
	if e.Dir, err = os.MkdirTemp("", "testenv-"); err != nil {
		return nil, err
	}
	e.removeDir = true
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()
	if err := e.setClients(cfg); err != nil {
		return nil, err
	}
	if _, err := e.Client.Discovery().ServerVersion(); err != nil {
		return nil, fmt.Errorf("testenv: TESTENV_KUBECONFIG=%s: %w", path, err)
	}
	e.logf("using the external cluster at %s (TESTENV_KUBECONFIG)", e.Host)
	if err := e.setup(ctx); err != nil {
		return nil, err
	}
	if opts.RunKueue {
		if err := e.waitKueueWebhooks(ctx, nil); err != nil {
			return nil, fmt.Errorf("%w (with TESTENV_KUBECONFIG, Options.RunKueue needs Kueue running in that cluster)", err)
		}
		e.logf("the external cluster's Kueue answers")
	}
	if err := e.checkExternalOperators(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Env) setClients(cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 100, 200
	var err error
	if e.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if e.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	e.RESTConfig = cfg
	return nil
}

// Stop stops every component in the reverse order of their start (so the Kueue
// manager first, the API server before etcd) and removes the
// directory unless Options.Dir was given. For an external cluster it only
// removes the temporary directory. It is safe to call more than once.
func (e *Env) Stop() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return nil
	}
	e.stopped = true
	if e.stopStorage != nil {
		e.stopStorage()
	}
	e.stopNet()
	for i := len(e.procs) - 1; i >= 0; i-- {
		e.procs[i].stop()
	}
	if e.opts.Detach {
		_ = os.Remove(filepath.Join(e.Dir, PIDFile))
	}
	if e.removeDir {
		return os.RemoveAll(e.Dir)
	}
	return nil
}

// Processes lists the running components in start order.
func (e *Env) Processes() []Process {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.processes()
}

func (e *Env) processes() []Process {
	var out []Process
	for _, p := range e.procs {
		if !p.exited() {
			out = append(out, p.Process)
		}
	}
	return out
}

// LogPath is the file that receives a component's stdout and stderr.
func (e *Env) LogPath(c Component) string { return filepath.Join(e.Dir, string(c)+".log") }

// start starts a component and records it (replacing an earlier, stopped
// process of the same component in place, so the stop order is unchanged).
func (e *Env) start(c Component, args []string) (*process, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return nil, errors.New("testenv: environment is stopped")
	}
	p, err := startProcess(string(c), e.Binaries[c], args, e.LogPath(c), e.opts.Detach)
	if err != nil {
		return nil, err
	}
	replaced := false
	for i, old := range e.procs {
		if old.Name == p.Name {
			e.procs[i], replaced = p, true
		}
	}
	if !replaced {
		e.procs = append(e.procs, p)
	}
	if e.opts.Detach {
		if err := WritePIDs(e.Dir, e.processes()); err != nil {
			return p, err
		}
	}
	return p, nil
}

func (e *Env) proc(c Component) *process {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, p := range e.procs {
		if p.Name == string(c) {
			return p
		}
	}
	return nil
}

// StopAPIServer stops kube-apiserver only (etcd and the other components keep
// running), for tests of how clients behave while it is down.
func (e *Env) StopAPIServer() error {
	if e.External {
		return errors.New("testenv: the cluster is external (TESTENV_KUBECONFIG), so its API server cannot be stopped")
	}
	p := e.proc(APIServer)
	if p == nil {
		return errors.New("testenv: kube-apiserver is not running")
	}
	p.stop()
	return nil
}

// StartAPIServer starts kube-apiserver, on the same port with the same flags
// after StopAPIServer, and waits until /readyz is ok.
func (e *Env) StartAPIServer(ctx context.Context) error {
	if e.External {
		return errors.New("testenv: the cluster is external (TESTENV_KUBECONFIG), so testenv does not run its API server")
	}
	if p := e.proc(APIServer); p != nil && !p.exited() {
		return errors.New("testenv: kube-apiserver is already running")
	}
	t := time.Now()
	p, err := e.start(APIServer, e.apiServerArgs())
	if err != nil {
		return err
	}
	if err := e.waitHTTP(ctx, p, e.Host+"/readyz", e.httpClient(e.Token)); err != nil {
		return err
	}
	e.logf("kube-apiserver %s ready at %s (%s)", KubernetesVersion, e.Host, time.Since(t).Round(10*time.Millisecond))
	return nil
}

// httpClient trusts the cluster CA and, when token is set, sends it.
func (e *Env) httpClient(token string) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.CAData)
	var rt http.RoundTripper = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}
	if token != "" {
		rt = bearer{token, rt}
	}
	return &http.Client{Transport: rt, Timeout: 2 * time.Second}
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// waitHTTP polls url until it answers 200, failing early if p exits. Errors
// carry the tail of the component's log.
func (e *Env) waitHTTP(ctx context.Context, p *process, url string, client *http.Client) error {
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	last := "no answer yet"
	for {
		if p.exited() {
			log := logTail(e.LogPath(Component(p.Name)))
			if strings.Contains(log, "address already in use") {
				return fmt.Errorf("testenv: %s: %w", p.Name, errPortInUse)
			}
			return fmt.Errorf("testenv: %s exited (%v) before %s was ok\n%s", p.Name, p.err, url, log)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, tail(string(body), 10))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: %s: %s not ok after %s (last: %s)\n%s", p.Name, url, e.opts.Timeout, last, logTail(e.LogPath(Component(p.Name))))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pickPorts is freePorts; a variable so that a test can hand out a taken port.
var pickPorts = freePorts

// freePorts returns n distinct free loopback ports. All are held open at once
// so that they differ; another process may still take one before it is used.
func freePorts(n int) ([]int, error) {
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// writeKubeconfig writes a kubeconfig with one context, "testenv".
func writeKubeconfig(path, host string, ca []byte, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["testenv"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: ca}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["testenv"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: "admin"}
	cfg.CurrentContext = "testenv"
	return clientcmd.WriteToFile(*cfg, path)
}

// stateFiles are the entries Start writes in Options.Dir; cleanDir removes
// them (and nothing else) before a new cluster starts there.
var stateFiles = []string{"etcd", "pki", "kubeconfig", "kwok.yaml", "kueue", "lws", "volumes", PIDFile}

func cleanDir(dir string) error {
	for _, name := range stateFiles {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, l := range logs {
		if err := os.Remove(l); err != nil {
			return err
		}
	}
	return nil
}
