// Package process starts and stops testenv's local processes by PID: one
// process group each, a parent-death signal unless detached, logs appended to
// a file, pids files for detached clusters, and free loopback ports.
package process

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Process is one running component, as recorded in a pids file.
type Process struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	Path string `json:"path"` // the binary, to tell the process from a later one reusing its PID
}

// Proc is a process started by this process.
type Proc struct {
	Process
	done chan struct{} // closed once the process has exited and been reaped
	err  error         // its exit status, valid after done
}

// How long a component gets to exit after SIGTERM before it is killed.
const stopGrace = 5 * time.Second

// Start starts bin with args, stdout and stderr appended to logPath, and
// env (KEY=VALUE) over this process's environment.
//
// The child gets its own process group so Stop can signal it and anything it
// spawned. Attached children also get Pdeathsig SIGKILL: when the test binary
// dies, however it dies, the kernel kills them. Detached children (detach=true,
// for `testenv up`) get their own session instead and outlive this process.
func Start(name, bin string, args []string, logPath string, detach bool, env ...string) (*Proc, error) {
	return start(name, bin, args, logPath, detach, true, env)
}

// StartOutput starts bin attached, like Start, with its stdout and stderr
// alone in outPath (no header line): a container's log.
func StartOutput(name, bin string, args []string, outPath string, env ...string) (*Proc, error) {
	return start(name, bin, args, outPath, false, false, env)
}

func start(name, bin string, args []string, logPath string, detach, header bool, env []string) (*Proc, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own copy of the descriptor
	if header {
		fmt.Fprintf(logFile, "==== %s %s\n", time.Now().Format(time.RFC3339), strings.Join(append([]string{bin}, args...), " "))
	}

	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	if detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("testenv: starting %s: %w", name, err)
	}
	p := &Proc{
		Process: Process{Name: name, PID: cmd.Process.Pid, Path: bin},
		done:    make(chan struct{}),
	}
	// Reap the child as soon as it exits, so exits are noticed while waiting for
	// readiness and no zombie is left behind.
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	p.awaitExec()
	return p, nil
}

// awaitExec returns once the child runs its binary, or has exited. cmd.Start
// returns when the exec closed the child's close-on-exec descriptors, which
// the kernel does before the new program's arguments are in
// /proc/PID/cmdline: read in that instant, the cmdline is empty, and Alive —
// which checks it to tell our process from a later one reusing the PID —
// would call a process that just started dead (seen on a loaded machine).
func (p *Proc) awaitExec() {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID)); err != nil || len(cmdline) > 0 || p.Exited() {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Running is a Proc that counts as running until its done channel is closed,
// for tests of code that looks at processes without starting one.
func Running(done chan struct{}) *Proc { return &Proc{done: done} }

// Done is closed once the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the process's exit status, valid once it has exited.
func (p *Proc) Err() error { return p.err }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM to the process group, then SIGKILL after a grace period.
func (p *Proc) Stop() {
	if p.Exited() {
		return
	}
	_ = syscall.Kill(-p.PID, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		_ = syscall.Kill(-p.PID, syscall.SIGKILL)
		<-p.done
	}
}

// Alive reports whether the recorded process is still running: the PID exists,
// is not a zombie, and still runs the recorded binary.
func (p Process) Alive() bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name, which may contain spaces.
	if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X' {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
	if err != nil {
		return false
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	return p.Path == "" || string(argv0) == p.Path
}

// StopAll stops recorded processes in reverse order (the order they were
// started in is etcd, API server, controller manager, scheduler, kwok, …; the
// API server must go before etcd or it hangs on shutdown): SIGTERM to each
// process group, SIGKILL after a grace period. Processes already gone are
// skipped.
func StopAll(procs []Process) {
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		if !p.Alive() {
			continue
		}
		_ = syscall.Kill(-p.PID, syscall.SIGTERM)
		_ = syscall.Kill(p.PID, syscall.SIGTERM) // in case it is not a group leader
		if !waitGone(p, stopGrace) {
			_ = syscall.Kill(-p.PID, syscall.SIGKILL)
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
			waitGone(p, stopGrace)
		}
	}
}

func waitGone(p Process, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for p.Alive() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}
