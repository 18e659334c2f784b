package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/nodes"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

// A detached cluster (Options.Detach, `testenv up`) outlives the process
// that started it; what must keep running in a process of ours runs in its
// agent (Agent, `<program> agent <dir>`): the storage provisioner, so
// claims bind, and with a pod runner the egress proxy, the pod runner (each
// adapter's binary built when its first pod runs) and the nodes' kubelet
// log endpoint. Start writes what the agent runs into <dir>/agent.json.
const agentFile = "agent.json"

// agentConfig is <dir>/agent.json.
type agentConfig struct {
	Runner      bool           `json:"runner"`             // egress proxy and pod runner
	Adapters    []string       `json:"adapters,omitempty"` // registered adapters' names
	Commands    []agentCommand `json:"commands,omitempty"`
	KubeletPort int            `json:"kubeletPort,omitempty"`
}

// agentCommand is a podrunner.Command, its image pattern as text.
type agentCommand struct {
	Image     string `json:"image"`
	Container string `json:"container,omitempty"`
	Play      string `json:"play,omitempty"`
}

// agentConfig is what this cluster's agent runs.
func (e *Env) agentConfig() (agentConfig, error) {
	c := agentConfig{Runner: e.opts.runsPods(), KubeletPort: e.kubeletPort}
	if !c.Runner {
		return c, nil
	}
	for _, a := range e.opts.runnerAdapters() {
		if podrunner.ByName(a.Name) != a {
			return c, fmt.Errorf("testenv: a detached cluster runs registered pod adapters only (podrunner.Adapters), not %q", a.Name)
		}
		c.Adapters = append(c.Adapters, a.Name)
	}
	for _, cmd := range e.opts.Commands {
		c.Commands = append(c.Commands, agentCommand{Image: cmd.Image.String(), Container: cmd.Container, Play: cmd.Play})
	}
	return c, nil
}

func writeAgentConfig(dir string, c agentConfig) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, agentFile), append(b, '\n'), 0o644)
}

func readAgentConfig(dir string) (agentConfig, error) {
	var c agentConfig
	b, err := os.ReadFile(filepath.Join(dir, agentFile))
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("testenv: %s: %w", filepath.Join(dir, agentFile), err)
	}
	return c, nil
}

// DetachedRunsPods reports whether the detached cluster in dir has a pod
// runner (started with Options.PodRunner, Controllers or Commands).
func DetachedRunsPods(dir string) bool {
	c, err := readAgentConfig(dir)
	return err == nil && c.Runner
}

// RunAgent runs the agent of the detached cluster in dir until ctx ends,
// then stops the processes it started: the storage provisioner and, when
// the cluster has one, the pod runner with its egress proxy. `testenv agent
// <dir>` calls it; Start starts that for Options.Detach with Scheduling.
func RunAgent(ctx context.Context, dir string, log io.Writer) error {
	c, err := readAgentConfig(dir)
	if err != nil {
		return err
	}
	logf := func(format string, args ...any) { fmt.Fprintf(log, "testenv agent: "+format+"\n", args...) }
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var o podrunner.AgentOptions
	for _, name := range c.Adapters {
		a := podrunner.ByName(name)
		if a == nil {
			return fmt.Errorf("testenv: %s names the pod adapter %q, which this program does not have", agentFile, name)
		}
		o.Adapters = append(o.Adapters, a)
	}
	for _, cmd := range c.Commands {
		re, err := regexp.Compile(cmd.Image)
		if err != nil {
			return fmt.Errorf("testenv: %s: %w", agentFile, err)
		}
		o.Commands = append(o.Commands, podrunner.Command{Image: re, Container: cmd.Container, Play: cmd.Play})
	}
	o.KubeletPort = c.KubeletPort

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		nodes.RunProvisioner(ctx, client, dir, logf)
	}()
	logf("storage provisioner running (volumes under %s)", filepath.Join(dir, "volumes"))
	if !c.Runner {
		<-ctx.Done()
	} else {
		err = podrunner.RunAgent(ctx, dir, o, logf)
	}
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	cancel() // the provisioner too, when the runner failed
	wg.Wait()
	return err
}
