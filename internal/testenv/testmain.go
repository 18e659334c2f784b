package testenv

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"testing"
)

var current atomic.Pointer[Env]

// Current is the cluster Main started for this test package, nil when Main
// did not start one (TF_ACC unset).
func Current() *Env { return current.Load() }

// Main runs a test package's tests against one cluster: call it from TestMain.
// Without TF_ACC it only runs the tests (acceptance tests skip themselves and
// Current returns nil). With TF_ACC it builds what is missing, starts the
// cluster described by opts, runs the tests, stops the cluster, even when
// interrupted or when m.Run panics, and exits with the tests' code.
func Main(m *testing.M, opts Options) {
	if os.Getenv("TF_ACC") == "" {
		os.Exit(m.Run())
	}
	os.Exit(runMain(m, opts))
}

func runMain(m *testing.M, opts Options) (code int) {
	env, err := Start(context.Background(), opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	current.Store(env)
	defer func() {
		current.Store(nil)
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: stopping: %v\n", err)
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "testenv: panic: %v\n", r)
			code = 2
		}
	}()

	// On Ctrl-C or SIGTERM stop the cluster before exiting. (A test binary
	// that dies any other way takes its children along through Pdeathsig, but
	// leaves its temporary directory behind.)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	go func() {
		s := <-signals
		fmt.Fprintf(os.Stderr, "testenv: %v: stopping the cluster\n", s)
		_ = env.Stop()
		os.Exit(1)
	}()

	return m.Run()
}
