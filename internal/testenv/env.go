package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/controlplane"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
)

// Env is a running cluster: what tests use of it, and the parts it is made
// of (package doc).
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
	removeDir bool

	procs       *process.Group             // every process, in start order
	cp          *controlplane.ControlPlane // etcd, API server, controller manager, scheduler
	net         podrunner.Local            // egress proxy and pod runner (Options.Egress, PodRunner)
	kubeletPort int                        // the fake nodes' kubelet port (pod runner's log endpoint)
	stopStorage context.CancelFunc         // the storage provisioner (package nodes)
	releases    []func()                   // machine locks of Options.Controllers (podrunner.Adapter.Exclusive)

	mu      sync.Mutex
	stopped bool
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
	if opts.runsPods() {
		opts.Egress, opts.Scheduling = true, true
	}
	if len(opts.Controllers) > 0 && len(opts.Nodes) == 0 {
		return nil, errors.New("testenv: Options.Controllers needs Options.Nodes: the controllers' pods run on (fake) nodes")
	}

	components := []Component{Etcd, APIServer}
	if opts.Scheduling {
		components = append(components, ControllerManager, Scheduler, Kwok)
	}
	all := specs()
	var want []binaries.Spec
	for _, c := range components {
		want = append(want, all[c])
	}
	// The pod adapters' binaries, by version (Kueue can be two versions).
	want = append(want, opts.runnerBinaries()...)
	bins, err := ensureSpecs(ctx, opts.Log, want...)
	if err != nil {
		return nil, err
	}
	// Where the runner's other binaries are, or will be once built.
	for _, a := range opts.runnerAdapters() {
		for _, s := range append([]binaries.Spec{a.Binary}, a.Alternates...) {
			p, err := binaries.Path(s)
			if err != nil {
				return nil, err
			}
			if bins[Component(s.Name)] == "" {
				bins[Component(s.Name)] = p
			}
			if bins[Component(s.Key())] == "" {
				bins[Component(s.Key())] = p
			}
		}
	}

	// Free ports are picked before the components bind them, so another
	// process (a parallel test package, an outgoing connection) can take one
	// in between; start again on fresh ports when that happens.
	for attempt := 1; ; attempt++ {
		env, err := startLocal(ctx, opts, bins)
		if errors.Is(err, process.ErrPortInUse) && attempt < 3 {
			fmt.Fprintf(opts.Log, "%v; starting again on other ports\n", err)
			continue
		}
		return env, err
	}
}

// runsPods reports whether the cluster has a pod runner.
func (o Options) runsPods() bool {
	return o.PodRunner || len(o.Controllers) > 0 || len(o.Commands) > 0 || len(o.Adapters) > 0
}

// Command is a container the pod runner runs by its own command line
// (Options.Commands).
type Command = podrunner.Command

// runnerBinaries are the binaries Start builds up front, before the
// cluster starts: those of the adapters a test names (Controllers,
// Adapters). The pod runner builds the others' when their first pod is to
// run (Options.PodRunner).
func (o Options) runnerBinaries() []binaries.Spec {
	var out []binaries.Spec
	for _, c := range o.Controllers {
		out = append(out, c.adapter.Binary)
	}
	for _, a := range o.Adapters {
		out = append(out, a.Binary)
	}
	return out
}

// runnerAdapters are the adapters the pod runner runs: with PodRunner every
// registered one but the on-demand ones (every one in a detached cluster,
// `testenv up --pod-runner`), and those of Controllers and Adapters. A
// registered adapter stands for a copy of the same name (KueueAt's): it
// runs every version its images ask for.
func (o Options) runnerAdapters() []*podrunner.Adapter {
	var out []*podrunner.Adapter
	add := func(a *podrunner.Adapter) {
		if r := podrunner.ByName(a.Name); r != nil {
			a = r
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	if o.PodRunner {
		for _, a := range podrunner.Adapters {
			if !a.OnDemand || o.Detach {
				add(a)
			}
		}
	}
	for _, c := range o.Controllers {
		add(c.adapter)
	}
	for _, a := range o.Adapters {
		add(a)
	}
	return out
}

func (e *Env) logf(format string, args ...any) {
	fmt.Fprintf(e.opts.Log, "testenv: "+format+"\n", args...)
}

// startExternal connects to the cluster of an existing kubeconfig.
func startExternal(ctx context.Context, path string, opts Options) (_ *Env, err error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("testenv: TESTENV_KUBECONFIG=%s: %w", path, err)
	}
	e := &Env{opts: opts, External: true, Kubeconfig: path, Host: cfg.Host, Token: cfg.BearerToken, CAData: cfg.CAData, Binaries: Binaries{}}
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
	e.procs = &process.Group{Dir: e.Dir}
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
	if err := e.checkExternalControllers(ctx); err != nil {
		return nil, err
	}
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

// Stop stops the pod runner's processes, then every component in the
// reverse order of their start (the API server before etcd), and removes the
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
	e.net.Stop()
	e.procs.Stop()
	for _, release := range e.releases {
		release()
	}
	if e.removeDir {
		return os.RemoveAll(e.Dir)
	}
	return nil
}

// Processes lists the running components in start order.
func (e *Env) Processes() []Process { return e.procs.Running() }

// EtcdURL is etcd's client URL (loopback), for tests that read what the
// API server stored; empty for an External cluster.
func (e *Env) EtcdURL() string {
	if e.cp == nil {
		return ""
	}
	return fmt.Sprintf("http://127.0.0.1:%d", e.cp.Ports.EtcdClient)
}

// LogPath is the file that receives a component's stdout and stderr.
func (e *Env) LogPath(c Component) string { return e.procs.LogPath(string(c)) }

// start starts a component and records it (replacing an earlier, stopped
// process of the same component in place, so the stop order is unchanged).
func (e *Env) start(c Component, args []string) (*process.Proc, error) {
	return e.procs.Start(string(c), e.Binaries[c], args)
}

func (e *Env) proc(c Component) *process.Proc { return e.procs.Find(string(c)) }

// waitHTTP polls url until it answers 200, failing early if p exits.
func (e *Env) waitHTTP(ctx context.Context, p *process.Proc, url string, client *http.Client) error {
	return process.WaitHTTP(ctx, p, url, client, e.opts.Timeout, e.procs.LogPath(p.Name))
}

// StopAPIServer stops kube-apiserver only (etcd and the other components keep
// running), for tests of how clients behave while it is down.
func (e *Env) StopAPIServer() error {
	if e.External {
		return errors.New("testenv: the cluster is external (TESTENV_KUBECONFIG), so its API server cannot be stopped")
	}
	return e.cp.StopAPIServer()
}

// StartAPIServer starts kube-apiserver, on the same port with the same flags
// after StopAPIServer, and waits until /readyz is ok.
func (e *Env) StartAPIServer(ctx context.Context) error {
	if e.External {
		return errors.New("testenv: the cluster is external (TESTENV_KUBECONFIG), so testenv does not run its API server")
	}
	return e.cp.StartAPIServer(ctx)
}

// stateFiles are the entries Start writes in Options.Dir; cleanDir removes
// them (and nothing else) before a new cluster starts there.
var stateFiles = []string{"etcd", "pki", "kubeconfig", "kwok.yaml", "kueue", "lws", "volumes", "charts", agentFile, PIDFile}

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
