package testenv

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Several clusters for one test package (MultiKueue: a manager and its
// workers). Each Env is a whole local control plane of its own — directory,
// PKI, free ports, processes, egress proxy and pod runner — so Start can be
// called once per cluster.

var clusters struct {
	sync.Mutex
	envs []*Env
}

// Clusters are the clusters MainClusters started, in the order of its
// options; nil without TF_ACC.
func Clusters() []*Env {
	clusters.Lock()
	defer clusters.Unlock()
	return clusters.envs
}

// MainClusters is Main for tests that need several clusters: it starts one
// cluster per Options, in order (the first one is also Current), runs the
// tests and stops them all in reverse order, also on Ctrl-C or a panic.
func MainClusters(m *testing.M, opts ...Options) {
	if os.Getenv("TF_ACC") == "" {
		os.Exit(m.Run())
	}
	os.Exit(runClusters(m, opts))
}

func runClusters(m *testing.M, opts []Options) (code int) {
	var envs []*Env
	stop := sync.OnceFunc(func() {
		current.Store(nil)
		clusters.Lock()
		clusters.envs = nil
		clusters.Unlock()
		for i := len(envs) - 1; i >= 0; i-- {
			if err := envs[i].Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "testenv: stopping cluster %d: %v\n", i+1, err)
			}
		}
	})
	defer stop()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	go func() {
		s := <-signals
		fmt.Fprintf(os.Stderr, "testenv: %v: stopping the clusters\n", s)
		stop()
		os.Exit(1)
	}()
	if os.Getenv("TESTENV_KUBECONFIG") != "" && len(opts) > 1 {
		// Every Start would return that one cluster: a manager would be
		// its own worker.
		fmt.Fprintf(os.Stderr, "testenv: %d clusters asked for, but TESTENV_KUBECONFIG names one: unset it to run these tests on local clusters\n", len(opts))
		return 1
	}
	for i, o := range opts {
		env, err := Start(context.Background(), o)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testenv: cluster %d of %d: %v\n", i+1, len(opts), err)
			return 1
		}
		envs = append(envs, env)
	}
	current.Store(envs[0])
	clusters.Lock()
	clusters.envs = envs
	clusters.Unlock()
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "testenv: panic: %v\n", r)
			code = 2
		}
	}()
	return m.Run()
}

// RSS is the resident memory of the cluster's processes in bytes: its
// components' and the pod runner's (the controllers), summed from
// /proc/<pid>/status (VmRSS). Processes that exited meanwhile count 0.
func (e *Env) RSS() (int64, error) {
	var total int64
	for _, p := range append(e.Processes(), e.PodProcesses()...) {
		kib, err := vmRSS(p.PID)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return 0, err
		}
		total += kib * 1024
	}
	return total, nil
}

func vmRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, s.Err()
}

// KubeconfigData is the cluster's kubeconfig, which has everything inline (CA
// data, the admin token), for a client that cannot read this machine's files,
// such as a MultiKueue manager; its server is the loopback address of the API
// server.
func (e *Env) KubeconfigData() ([]byte, error) {
	return os.ReadFile(e.Kubeconfig)
}
