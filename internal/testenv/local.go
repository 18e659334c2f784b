package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/controlplane"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/nodes"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/pki"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
	"strings"
)

// pickPorts is process.FreePorts; a variable so that a test can hand out a
// taken port.
var pickPorts = process.FreePorts

// startLocal starts the processes of a local cluster once: the parts in
// order, each from its package.
func startLocal(ctx context.Context, opts Options, bins Binaries) (_ *Env, err error) {
	begin := time.Now()
	e := &Env{opts: opts, Binaries: bins, Dir: opts.Dir}
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
	e.procs = &process.Group{Dir: e.Dir, Detach: opts.Detach}
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()

	keys, err := pki.New(e.Dir)
	if err != nil {
		return nil, err
	}
	e.Token, e.CAData = keys.Token, keys.CAPEM
	free, err := pickPorts(5)
	if err != nil {
		return nil, err
	}
	var apiArgs []string
	if opts.Egress {
		apiArgs = append(apiArgs, "--egress-selector-config-file="+podrunner.EgressConfigPath(e.Dir))
	}
	e.cp = &controlplane.ControlPlane{
		Dir: e.Dir, PKI: keys, Procs: e.procs, Bins: bins.paths(),
		Ports:                  controlplane.Ports{EtcdClient: free[0], EtcdPeer: free[1], APIServer: free[2], ControllerManager: free[3], Scheduler: free[4]},
		APIServerArgs:          append(apiArgs, opts.APIServerArgs...),
		Controllers:            opts.KubeControllers,
		NodeMonitorGracePeriod: e.nodeLease() + 10*time.Second,
		Timeout:                opts.Timeout,
		Logf:                   e.logf,
	}
	e.Host, e.Kubeconfig = e.cp.Host(), e.cp.Kubeconfig()
	if err := controlplane.WriteKubeconfig(e.Kubeconfig, e.Host, e.CAData, e.Token); err != nil {
		return nil, err
	}
	if err := e.setClients(&rest.Config{
		Host:            e.Host,
		BearerToken:     e.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: e.CAData},
	}); err != nil {
		return nil, err
	}

	if err := e.cp.StartEtcd(ctx); err != nil {
		return nil, err
	}
	if err := e.startEgress(); err != nil {
		return nil, err
	}
	if err := e.cp.StartAPIServer(ctx); err != nil {
		return nil, err
	}
	if opts.Scheduling {
		if err := e.startScheduling(ctx); err != nil {
			return nil, err
		}
		if opts.Detach {
			// Its provisioner runs in the agent (startPodRunner), which
			// outlives this process.
			if err := nodes.CreateStorageClass(ctx, e.Client, e.logf); err != nil {
				return nil, err
			}
		} else {
			stop, err := nodes.StartStorage(ctx, e.Client, e.Dir, e.logf)
			if err != nil {
				return nil, err
			}
			e.mu.Lock()
			e.stopStorage = stop
			e.mu.Unlock()
		}
		if err := e.startPodRunner(ctx); err != nil {
			return nil, err
		}
	}
	if err := e.setup(ctx); err != nil {
		return nil, err
	}
	if err := e.installControllers(ctx); err != nil {
		return nil, err
	}
	e.logf("cluster ready in %s (kubeconfig %s)", time.Since(begin).Round(10*time.Millisecond), e.Kubeconfig)
	return e, nil
}

// startScheduling starts what makes pods run: kube-controller-manager,
// kube-scheduler and kwok, all with the admin kubeconfig.
func (e *Env) startScheduling(ctx context.Context) error {
	t := time.Now()
	wait, err := e.cp.StartScheduling(ctx)
	if err != nil {
		return err
	}
	k := nodes.KwokOptions{Lease: e.nodeLease()}
	if e.opts.runsPods() {
		k.RunnerImages = podrunner.ImagePattern(e.opts.runnerAdapters())
		for _, c := range e.opts.Commands {
			k.RunnerContainers = append(k.RunnerContainers, nodes.Container{Image: c.Image.String(), Name: c.Container})
		}
		// The nodes' kubelet port: the pod runner serves pod logs there.
		ports, err := process.FreePorts(2)
		if err != nil {
			return err
		}
		e.kubeletPort, k.NodePort, k.ServerPort = ports[0], ports[0], ports[1]
	}
	kwok, err := nodes.StartKwok(ctx, e.procs, e.Binaries[Kwok], e.Dir, e.Kubeconfig, k)
	if err != nil {
		return err
	}
	if err := wait(); err != nil {
		return err
	}
	if err := nodes.CheckKwok(kwok, e.LogPath(Kwok)); err != nil {
		return err
	}
	e.logf("kube-controller-manager, kube-scheduler, kwok %s running (%s)", KwokVersion, time.Since(t).Round(10*time.Millisecond))
	return nil
}

// startEgress starts the egress proxy of a local cluster (Options.Egress) and
// writes the API server's egress configuration; backends are set later (the
// pod runner starts after the API server). In a detached cluster the agent
// process serves the socket instead (see RunAgent).
func (e *Env) startEgress() error {
	if !e.opts.Egress {
		return nil
	}
	if err := podrunner.WriteEgressConfig(e.Dir); err != nil {
		return err
	}
	if e.opts.Detach {
		return nil
	}
	return e.net.StartEgress(e.Dir, e.Client, e.logf)
}

// startPodRunner starts the pod runner (Options.PodRunner) in this process;
// for a detached cluster it starts the agent process instead, which runs the
// storage provisioner and, with a pod runner, the runner (see agent.go).
func (e *Env) startPodRunner(ctx context.Context) error {
	if e.opts.Detach {
		c, err := e.agentConfig()
		if err != nil {
			return err
		}
		if err := writeAgentConfig(e.Dir, c); err != nil {
			return err
		}
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
		case <-p.Done():
			return fmt.Errorf("testenv: %s exited (%v)\n%s", Agent, p.Err(), process.LogTail(e.LogPath(Agent)))
		case <-time.After(time.Second):
		}
		what := "storage provisioner"
		if c.Runner {
			what = "storage provisioner, egress proxy and pod runner (adapters: " + strings.Join(c.Adapters, ", ") + "; each built when its first pod runs)"
		}
		e.logf("%s running as %s (pid %d, log %s)", what, Agent, p.PID, e.LogPath(Agent))
		return nil
	}
	if !e.opts.runsPods() {
		return nil
	}
	names, err := e.net.StartRunner(e.Client, e.Host, e.CAData, e.Dir, e.opts.runnerAdapters(), e.opts.Commands, e.kubeletPort, e.logf)
	if err != nil {
		return err
	}
	e.logf("pod runner running (adapters: %s)", strings.Join(names, ", "))
	return nil
}
