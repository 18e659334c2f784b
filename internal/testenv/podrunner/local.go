package podrunner

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
)

// Local is the egress proxy and the pod runner of a cluster, run inside the
// process that started it.
type Local struct {
	egress    *egressProxy
	egressLog *os.File
	backends  *lateBackends
	runner    *podRunner
	kubelet   *kubeletLogs
}

// EgressConfigPath is the API server's egress configuration in dir
// (--egress-selector-config-file), written by WriteEgressConfig.
func EgressConfigPath(dir string) string { return filepath.Join(dir, egressConfigFile) }

// WriteEgressConfig writes the API server's egress configuration of the
// cluster in dir: its calls to Services go to the proxy's socket in dir.
func WriteEgressConfig(dir string) error {
	return writeEgressConfig(EgressConfigPath(dir), filepath.Join(dir, egressSocketFile))
}

// StartEgress starts the egress proxy on dir's socket; backends are set
// later, by StartRunner (the pod runner starts after the API server).
func (l *Local) StartEgress(dir string, client kubernetes.Interface, logf func(string, ...any)) error {
	socket := filepath.Join(dir, egressSocketFile)
	logFile, err := os.OpenFile(filepath.Join(dir, egressLogFile), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	l.egressLog = logFile
	l.backends = &lateBackends{}
	p, err := startEgressProxy(socket, client, l.backends, logf, &syncWriter{w: logFile})
	if err != nil {
		return err
	}
	l.egress = p
	logf("egress proxy on %s (the API server's cluster egress)", socket)
	return nil
}

// StartRunner starts the pod runner with the adapters and the commands cmds,
// and returns their names; with kubeletPort > 0 it serves the pods' logs
// there (the nodes' kubelet port, see kubeletLogs). An adapter's binary is
// built when its first pod is to run.
func (l *Local) StartRunner(client kubernetes.Interface, host string, ca []byte, dir string, adapters []*Adapter, cmds []Command, kubeletPort int, logf func(string, ...any)) ([]string, error) {
	r := newPodRunner(client, host, ca, dir, adapters, cmds, logf)
	r.start()
	if kubeletPort > 0 {
		k, err := startKubeletLogs(kubeletPort, r.dir, logf)
		if err != nil {
			r.stop()
			return nil, err
		}
		l.kubelet = k
	}
	l.runner = r
	if l.backends != nil {
		l.backends.set(r)
	}
	names := []string{}
	for _, a := range r.adapters {
		names = append(names, a.Name)
	}
	return names, nil
}

// Stop stops the pod runner's processes and the egress proxy.
func (l *Local) Stop() {
	if l.kubelet != nil {
		l.kubelet.close()
	}
	if l.runner != nil {
		l.runner.stop()
	}
	if l.egress != nil {
		l.egress.close()
	}
	if l.egressLog != nil {
		_ = l.egressLog.Close()
	}
}

// Agent is the process that serves the egress socket and runs the
// pod runner for a detached cluster (`testenv up`), which outlives the
// process that called Start: the calling program itself, run as
// `<program> agent <dir>`, which must call testenv.RunAgent (cmd/testenv
// does). It also runs the storage provisioner (package nodes).
const Agent = "testenv-agent"

// AgentOptions are what the agent's pod runner runs.
type AgentOptions struct {
	Adapters    []*Adapter
	Commands    []Command
	KubeletPort int // the nodes' kubelet port: the pods' logs are served there
}

// RunAgent serves the egress proxy and the pod runner of the detached cluster
// in dir until ctx ends, then stops the processes it started. testenv's agent
// (`testenv agent <dir>`) calls it. It builds nothing up front: a pod's
// binary is built when the pod is to run.
func RunAgent(ctx context.Context, dir string, o AgentOptions, logf func(string, ...any)) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 100, 200
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	r := newPodRunner(client, cfg.Host, cfg.CAData, dir, o.Adapters, o.Commands, logf)
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
	var k *kubeletLogs
	if o.KubeletPort > 0 {
		if k, err = startKubeletLogs(o.KubeletPort, r.dir, logf); err != nil {
			r.stop()
			p.close()
			return err
		}
	}
	names := []string{}
	for _, a := range r.adapters {
		names = append(names, a.Name)
	}
	logf("serving %s and running pods (adapters: %s; each binary built when its first pod runs)", filepath.Join(dir, egressSocketFile), strings.Join(names, ", "))
	<-ctx.Done()
	if k != nil {
		k.close()
	}
	r.stop()
	p.close()
	logf("stopped")
	return nil
}

// Processes lists the processes the pod runner runs for pods, named
// "pod <namespace>/<name>".
func (l *Local) Processes() []process.Process {
	if l.runner == nil {
		return nil
	}
	return l.runner.processes()
}
