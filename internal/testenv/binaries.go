package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Component names a control-plane binary.
type Component string

const (
	APIServer         Component = "kube-apiserver"
	Etcd              Component = "etcd"
	ControllerManager Component = "kube-controller-manager"
	Scheduler         Component = "kube-scheduler"
	Kwok              Component = "kwok"
	Kueue             Component = "kueue"
	KubeRay           Component = "kuberay-operator"
	LWS               Component = "lws-controller"
)

// Version is the version of the component that testenv builds and runs.
func (c Component) Version() string {
	switch c {
	case Etcd:
		return EtcdVersion
	case Kwok:
		return KwokVersion
	case Kueue:
		return KueueVersion
	case KubeRay:
		return KubeRayVersion
	case LWS:
		return LWSVersion
	default:
		return KubernetesVersion
	}
}

// FileName is the cached binary's name, e.g. "kube-apiserver-v1.36.3".
func (c Component) FileName() string { return string(c) + "-" + c.Version() }

// coldBuild is a rough cold build time on a 2-core machine, shown while building.
func (c Component) coldBuild() string {
	switch c {
	case APIServer:
		return "~5 min"
	case ControllerManager, Scheduler:
		return "~1-2 min"
	case Etcd:
		return "~1 min"
	case Kwok:
		return "~2.5 min"
	case Kueue:
		return "~10 min"
	case KubeRay, LWS:
		return "~2-6 min"
	}
	return "a few minutes"
}

// Binaries maps components to the paths of their built binaries.
type Binaries map[Component]string

// versionLDFlags stamps the Kubernetes version into the binaries; unstamped,
// /version reports v0.0.0-master and version-checking clients (Kueue, Helm chart
// kubeVersion constraints) refuse the cluster.
func versionLDFlags() string {
	minor := strings.Split(strings.TrimPrefix(KubernetesVersion, "v"), ".")[1]
	return strings.Join([]string{
		"-X k8s.io/component-base/version.gitVersion=" + KubernetesVersion,
		"-X k8s.io/component-base/version.gitMajor=1",
		"-X k8s.io/component-base/version.gitMinor=" + minor,
		"-X k8s.io/component-base/version.gitTreeState=clean",
		"-X k8s.io/client-go/pkg/version.gitVersion=" + KubernetesVersion,
	}, " ")
}

// EnsureBinaries returns the paths of the given components' binaries in BinDir,
// building the missing ones first: the Kubernetes components and etcd with
// `go build` in <repo>/tools, kwok and Kueue with `go install module@version`,
// KubeRay and LWS with `go build` in their module's directory.
// A lock file in BinDir makes concurrent callers (parallel test packages) wait
// for one build instead of running their own. Progress goes to log (os.Stderr
// when nil).
func EnsureBinaries(ctx context.Context, log io.Writer, components ...Component) (Binaries, error) {
	if log == nil {
		log = os.Stderr
	}
	dir, err := BinDir()
	if err != nil {
		return nil, err
	}
	bins := Binaries{}
	var missing []Component
	for _, c := range components {
		bins[c] = filepath.Join(dir, c.FileName())
		if !isFile(bins[c]) {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return bins, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	unlock, err := lockFile(ctx, log, filepath.Join(dir, ".build.lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	for _, c := range missing {
		if isFile(bins[c]) { // built by whoever held the lock before us
			continue
		}
		if err := build(ctx, log, c, bins[c]); err != nil {
			return nil, err
		}
	}
	return bins, nil
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// lockFile takes an exclusive flock on path, polling so that ctx can cancel
// the wait, and returns the function that releases it.
func lockFile(ctx context.Context, log io.Writer, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	unlock := func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }
	announced := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return unlock, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("testenv: lock %s: %w", path, err)
		}
		if !announced {
			fmt.Fprintf(log, "testenv: another process is building binaries, waiting for %s\n", path)
			announced = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// build builds one component into dst: into a temporary name first, renamed
// into place only when complete, so a reader never sees half a binary.
func build(ctx context.Context, log io.Writer, c Component, dst string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".build-"+string(c)+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	var cmd *exec.Cmd
	out := filepath.Join(tmp, string(c))
	switch c {
	case APIServer, ControllerManager, Scheduler, Etcd:
		repo, err := RepoRoot()
		if err != nil {
			return err
		}
		if c == Etcd {
			cmd = exec.CommandContext(ctx, "go", "build", "-o", out, "./etcd")
		} else {
			cmd = exec.CommandContext(ctx, "go", "build", "-ldflags", versionLDFlags(), "-o", out, "k8s.io/kubernetes/cmd/"+string(c))
		}
		cmd.Dir = filepath.Join(repo, "tools")
		cmd.Env = append(os.Environ(), "GOWORK=off")
	case Kwok, Kueue:
		// `go install pkg@version` builds the module as its own main module,
		// with its own go.mod and without our replace directives.
		cmd = exec.CommandContext(ctx, "go", "install", "sigs.k8s.io/"+string(c)+"/cmd/"+string(c)+"@"+c.Version())
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOBIN="+tmp)
	case KubeRay, LWS:
		// `go build` in the module's directory of the module cache: the module
		// is the main module, with its own go.mod and go.sum, as with
		// `go install pkg@version` — which the module proxy can refuse
		// (for sigs.k8s.io/lws its deprecation check lists the module's
		// versions, and the list is 403 here).
		mod, pkg, ldflags := c.mainPackage()
		dir, err := ModuleDir(ctx, mod, c.Version())
		if err != nil {
			return err
		}
		cmd = exec.CommandContext(ctx, "go", "build", "-ldflags", ldflags, "-o", out, pkg)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false")
	default:
		return fmt.Errorf("testenv: unknown component %q", c)
	}
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output

	fmt.Fprintf(log, "testenv: building %s %s (cold: %s)…\n", c, c.Version(), c.coldBuild())
	start := time.Now()
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testenv: building %s: %w", c, err)
	}
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-tick.C:
			fmt.Fprintf(log, "testenv: still building %s (%s)\n", c, time.Since(start).Round(time.Second))
		case err = <-done:
			waiting = false
		}
	}
	if err != nil {
		return fmt.Errorf("testenv: building %s: %w\n%s", c, err, tail(output.String(), 40))
	}
	if err := os.Chmod(out, 0o755); err != nil {
		return err
	}
	if err := os.Rename(out, dst); err != nil {
		return err
	}
	fmt.Fprintf(log, "testenv: built %s in %s\n", c, time.Since(start).Round(time.Second))
	return nil
}

// mainPackage is where a component built in its module's directory has its
// main package (relative to the module), and its -ldflags.
func (c Component) mainPackage() (module, pkg, ldflags string) {
	switch c {
	case KubeRay: // main.go at the module root
		return kubeRayModule, ".", ""
	case LWS: // unstamped, it calls itself v0.0.0-main
		return lwsModule, "./cmd", "-X sigs.k8s.io/lws/pkg/version.GitVersion=" + LWSVersion
	}
	return "", "", ""
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
