// Package binaries builds the binaries testenv runs from Go modules, on first
// use, and caches them outside the repository by name and version
// (${XDG_CACHE_HOME:-$HOME/.cache}/terraform-provider-aiplatform/bin/<name>-<version>),
// each binary built once across processes (a file lock per binary: two
// different binaries build at once, the same one is built by one process
// while the others wait for it).
package binaries

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/process"
)

// Spec says how to build one binary. Exactly one way applies:
//   - Module "" or Dir set: `go build Package` (an import path) in a module
//     of the repository: Dir, tools/ when empty, whose go.mod pins the
//     version. tools/k8s-v0.36 and tools/k8s-v0.35 hold the controllers of
//     one Kubernetes generation each (Module names the controller's module,
//     which that go.mod requires at Version), so that one cache of compiled
//     packages serves them all instead of each compiling client-go,
//     controller-runtime and the rest again; the other tools modules (the
//     constants below) take those versions, or each other's, wherever a
//     binary's own requirements allow, for the same reason;
//   - Install: `go install Module/Package@Version`, the module built as its
//     own main module, with its own go.mod and without our replace directives;
//   - otherwise `go build Package` in Module@Version's directory of the module
//     cache: the module is the main module, with its own go.mod and go.sum, as
//     with `go install` — which the module proxy can refuse (for
//     sigs.k8s.io/lws its deprecation check lists the module's versions, and
//     the list is 403 here).
type Spec struct {
	Name      string // the cached file is <Name>-<Version>
	Version   string
	Module    string // module path; "" for the control plane's tools/ module
	Dir       string // the repository's module that builds it ("tools/k8s-v0.36"); see above
	Package   string // main package: an import path, or relative to Module ("./cmd"; see Target)
	LDFlags   string
	Install   bool
	ColdBuild string // rough cold build time on a 2-core machine, shown while building
	// BuildsAlso are other main packages of the same module (Module and
	// Version, or Dir) that the same `go build` builds (Install false): one
	// invocation compiles their shared dependencies once and in parallel
	// (KServe's manager and its LLMInferenceService controller share
	// nearly all of theirs). Building this Spec also caches each of them
	// under its own name; each stays buildable alone by its own Spec.
	BuildsAlso []Spec
}

// The modules of the repository that build binaries testenv caches
// (Spec.Dir), each so that binaries sharing dependencies compile them once.
const (
	K8s036    = "tools/k8s-v0.36"    // k8s.io v0.36, controller-runtime v0.24: Kueue 0.19, JobSet, the Trainer, LWS 0.9, the MPI Operator 0.8.2, the endpoint picker, kwok
	K8s035    = "tools/k8s-v0.35"    // k8s.io v0.35, controller-runtime v0.23: Kueue 0.17, the MPI Operator 0.8.0, the Trainer 2.2.0
	CR022     = "tools/cr-v0.22"     // k8s.io v0.35.3, controller-runtime v0.22, the rest at tools/k8s-v0.35's versions: KubeRay 1.6.2, JobSet 0.11.1, LWS 0.7.0
	KubeRay15 = "tools/kuberay-v1.5" // KubeRay 1.5.0 with tools/cr-v0.22's versions of the rest
	KServe    = "tools/kserve"       // KServe 0.20.0's manager and llmisvc, with KServe's own replace directives
	KServe019 = "tools/kserve-v0.19" // KServe 0.19.0 with tools/kserve's versions of the rest
	CLIs      = "tools/clis"         // the Pulumi CLI, its YAML host and goreleaser: one set of cloud SDKs
)

// FileName is the cached binary's name, e.g. "kube-apiserver-v1.36.3".
func (s Spec) FileName() string { return s.Name + "-" + s.Version }

// Paths maps binary names to the paths of built binaries. Each binary is
// also under "<name>@<version>" (Key), so one set can hold two versions of
// a binary; the plain name is the first spec of that name given to Ensure.
type Paths map[string]string

// Key is the Paths key of this version of the binary, "<Name>@<Version>".
func (s Spec) Key() string { return s.Name + "@" + s.Version }

// Ensure returns the paths of the given binaries in Dir, building the missing
// ones first, one after the other. A lock file per binary in Dir makes
// concurrent callers (parallel test packages, the pod runner's pods, another
// goroutine) wait for one build of it instead of running their own, while
// different binaries build at once. Progress goes to log (os.Stderr when nil).
func Ensure(ctx context.Context, log io.Writer, specs ...Spec) (Paths, error) {
	return EnsureFor(ctx, log, "", specs...)
}

// EnsureFor is Ensure with what the binaries are built for ("pod
// lws-system/lws-controller-manager-…"), said in the progress messages.
func EnsureFor(ctx context.Context, log io.Writer, purpose string, specs ...Spec) (Paths, error) {
	if log == nil {
		log = os.Stderr
	}
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	bins := Paths{}
	var missing []Spec
	for _, s := range specs {
		p := filepath.Join(dir, s.FileName())
		if _, ok := bins[s.Name]; !ok {
			bins[s.Name] = p
		}
		if _, dup := bins[s.Key()]; dup {
			continue
		}
		bins[s.Key()] = p
		for _, also := range s.BuildsAlso { // built by the same go build
			bins[also.Key()] = filepath.Join(dir, also.FileName())
			if _, ok := bins[also.Name]; !ok {
				bins[also.Name] = bins[also.Key()]
			}
		}
		if !isFile(p) {
			missing = append(missing, s)
		}
	}
	if len(missing) == 0 {
		return bins, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, s := range missing {
		if err := ensureOne(ctx, log, purpose, s, bins[s.Key()]); err != nil {
			return nil, err
		}
	}
	return bins, nil
}

// Path is where the binary of s is (or will be, once built) in Dir.
func Path(s Spec) (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, s.FileName()), nil
}

// LockName is the lock file, in Dir, of the binary named file (a
// Spec.FileName): one per binary, so different binaries build at once.
func LockName(file string) string { return "." + file + ".lock" }

// building serialises, within this process, the builds of one binary (a
// second flock on the same file from this process would wait too, but
// would say another process is building).
var (
	buildingMu sync.Mutex
	building   = map[string]*sync.Mutex{}
)

// ensureOne builds s into dst unless it is there, holding the binary's lock.
func ensureOne(ctx context.Context, log io.Writer, purpose string, s Spec, dst string) error {
	buildingMu.Lock()
	m := building[dst]
	if m == nil {
		m = &sync.Mutex{}
		building[dst] = m
	}
	buildingMu.Unlock()
	m.Lock()
	defer m.Unlock()
	if isFile(dst) { // built by another goroutine while we waited
		return nil
	}
	unlock, err := lockFile(ctx, log, filepath.Join(filepath.Dir(dst), LockName(s.FileName())), s.FileName())
	if err != nil {
		return err
	}
	defer unlock()
	if isFile(dst) { // built by whoever held the lock before us
		return nil
	}
	return build(ctx, log, purpose, s, dst)
}

// Built reports whether s is in the cache already.
func Built(s Spec) bool {
	dir, err := Dir()
	return err == nil && isFile(filepath.Join(dir, s.FileName()))
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// lockFile takes an exclusive flock on path, polling so that ctx can cancel
// the wait, and returns the function that releases it.
func lockFile(ctx context.Context, log io.Writer, path, what string) (func(), error) {
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
			fmt.Fprintf(log, "testenv: another process is building %s, waiting for it (lock %s)\n", what, path)
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

// command is the go command that builds s into out.
func command(ctx context.Context, s Spec, tmp, out string) (*exec.Cmd, error) {
	switch {
	case s.Module == "" || s.Dir != "":
		repo, err := RepoRoot()
		if err != nil {
			return nil, err
		}
		args := []string{"build", "-ldflags", s.ldflags()}
		pkgs, out := s.packages(out)
		cmd := exec.CommandContext(ctx, "go", append(append(args, "-o", out), pkgs...)...)
		dir := s.Dir
		if dir == "" {
			dir = "tools"
		}
		cmd.Dir = filepath.Join(repo, filepath.FromSlash(dir))
		cmd.Env = append(os.Environ(), "GOWORK=off")
		return cmd, nil
	case s.Install:
		cmd := exec.CommandContext(ctx, "go", "install", s.Module+"/"+s.Package+"@"+s.Version)
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOBIN="+tmp)
		return cmd, nil
	default:
		dir, err := ModuleDir(ctx, s.Module, s.Version)
		if err != nil {
			return nil, err
		}
		pkgs, out := s.packages(out)
		cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-ldflags", s.ldflags(), "-o", out}, pkgs...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false")
		return cmd, nil
	}
}

// ldflags are the linker's flags of a build: LDFlags, and no symbol table
// or DWARF (-s -w), which nothing here reads (a panic's trace does not need
// them) and which take a third of a large binary's link.
func (s Spec) ldflags() string { return strings.TrimSpace("-s -w " + s.LDFlags) }

// Target is the package `go build` is given. In a module of the repository
// (Dir) that is an import path: a Package relative to the binary's module
// ("." or "./cmd", as it is given to a build alone in that module's
// directory) is resolved against Module.
func (s Spec) Target() string {
	if s.Dir != "" && s.Module != "" && (s.Package == "." || strings.HasPrefix(s.Package, "./")) {
		return s.Module + strings.TrimPrefix(s.Package, ".")
	}
	return s.Package
}

// packages are the main packages one `go build` of s builds, and its -o:
// with BuildsAlso, a directory in which each binary is named after its
// package's last element.
func (s Spec) packages(out string) ([]string, string) {
	pkgs := []string{s.Target()}
	if len(s.BuildsAlso) == 0 {
		return pkgs, out
	}
	for _, also := range s.BuildsAlso {
		pkgs = append(pkgs, also.Target())
	}
	return pkgs, filepath.Dir(out) + string(filepath.Separator)
}

// build builds one binary into dst: into a temporary name first, renamed
// into place only when complete, so a reader never sees half a binary.
func build(ctx context.Context, log io.Writer, purpose string, s Spec, dst string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".build-"+s.Name+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	out := filepath.Join(tmp, s.Name)
	if s.Install { // go install names the binary after its package
		out = filepath.Join(tmp, path.Base(s.Package))
	}
	if len(s.BuildsAlso) > 0 { // go build -o <dir>/ names each binary after its package
		out = filepath.Join(tmp, "out", path.Base(s.Target()))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
	}
	cmd, err := command(ctx, s, tmp, out)
	if err != nil {
		return err
	}
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output

	cold := s.ColdBuild
	if cold == "" {
		cold = "a few minutes"
	}
	what := s.Name
	for _, also := range s.BuildsAlso {
		what += " + " + also.Name
	}
	if purpose != "" {
		purpose = " for " + purpose
	}
	fmt.Fprintf(log, "testenv: building %s %s%s (cold: %s)…\n", what, s.Version, purpose, cold)
	start := time.Now()
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testenv: building %s: %w", s.Name, err)
	}
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-tick.C:
			fmt.Fprintf(log, "testenv: still building %s (%s)\n", s.Name, time.Since(start).Round(time.Second))
		case err = <-done:
			waiting = false
		}
	}
	if err != nil {
		return fmt.Errorf("testenv: building %s: %w\n%s", s.Name, err, process.Tail(output.String(), 40))
	}
	if err := place(out, dst); err != nil {
		return err
	}
	for _, also := range s.BuildsAlso {
		if err := place(filepath.Join(filepath.Dir(out), path.Base(also.Target())), filepath.Join(filepath.Dir(dst), also.FileName())); err != nil {
			return err
		}
	}
	fmt.Fprintf(log, "testenv: built %s in %s\n", what, time.Since(start).Round(time.Second))
	return nil
}

// place moves a built binary into the cache under its final name.
func place(out, dst string) error {
	if err := os.Chmod(out, 0o755); err != nil {
		return err
	}
	return os.Rename(out, dst)
}
