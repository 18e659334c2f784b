package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/telemetry"
)

// buildProvider builds the provider into dir, as the acceptance tests do.
func buildProvider(ctx context.Context, repo, dir string) error {
	return goBuild(ctx, repo, filepath.Join(dir, "terraform-provider-aiplatform"), ".")
}

// buildFloorProviders builds the framework floors into dir:
// bench/floorprovider (one terraform_data-like resource) and
// bench/schemafloor (aiplatform's schemas, no logic).
func buildFloorProviders(ctx context.Context, repo, dir string) error {
	if err := goBuild(ctx, repo, filepath.Join(dir, "terraform-provider-floor"), "./bench/floorprovider"); err != nil {
		return err
	}
	return goBuild(ctx, repo, filepath.Join(dir, "terraform-provider-schemafloor"), "./bench/schemafloor")
}

func goBuild(ctx context.Context, repo, out, pkg string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = repo
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %v\n%s", pkg, err, b)
	}
	return nil
}

// copyFile copies an executable.
func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o755)
}

// workspace is a directory with one generated configuration and a CLI
// configuration whose dev_overrides point at the built provider (no
// registry, no init), as internal/acctest/cli.go does.
type workspace struct {
	name       string // "aiplatform", "terraform_data" or "framework"
	dir        string
	cliConfig  string
	tfPath     string
	kubeconfig string
	// profile, when set, is a directory for CPU profiles of the provider
	// (AIPLATFORM_PROFILE), one subdirectory per command.
	profile string
	env     []string // extra environment
	runs    int
}

func newWorkspace(root, name, terraform, providerDir, kubeconfig, config string) (*workspace, error) {
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(config), 0o644); err != nil {
		return nil, err
	}
	rc := filepath.Join(dir, "terraformrc")
	body := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"aiplatform/aiplatform\" = %q\n    \"aiplatform/floor\" = %q\n    \"aiplatform/schemafloor\" = %q\n  }\n  direct {}\n}\n",
		providerDir, providerDir, providerDir)
	if err := os.WriteFile(rc, []byte(body), 0o644); err != nil {
		return nil, err
	}
	return &workspace{name: name, dir: dir, cliConfig: rc, tfPath: terraform, kubeconfig: kubeconfig}, nil
}

// run is one terraform command.
type run struct {
	Wall     time.Duration
	ExitCode int
	Output   string
	Requests telemetry.RequestLog
	// PolledHWMKiB is the highest VmHWM of the provider processes seen by
	// polling /proc while terraform ran (a cross-check of Requests.PeakVmHWMKiB).
	PolledHWMKiB int64
	// PolledProcs is the number of provider processes seen by polling,
	// including those that made no request (schema, validation).
	PolledProcs int
	// ProviderCPU is the CPU time of the provider processes (last polled
	// value of each); TotalCPU that of terraform and all its children.
	ProviderCPU, TotalCPU time.Duration
	// ProcessCPU is the CPU time of each provider process, in start order.
	ProcessCPU []time.Duration
	Changes    string // "Plan: 0 to add, 6 to change, 0 to destroy." or "No changes."
	ProfileDir string // where the provider wrote its profiles (workspace.profile)
}

// PeakKiB is the provider's peak resident memory, from its own log or polling.
func (r run) PeakKiB() int64 { return max(r.Requests.PeakVmHWMKiB, r.PolledHWMKiB) }

var planLine = regexp.MustCompile(`(?m)^(Plan: .*|No changes\..*|Apply complete! .*)$`)

// terraform runs the CLI in the workspace with a fresh request log. Exit codes
// in okCodes are not errors (plan -detailed-exitcode exits 2 on changes).
func (w *workspace) terraform(ctx context.Context, args []string, okCodes ...int) (run, error) {
	logPath := filepath.Join(w.dir, fmt.Sprintf("requests-%d.jsonl", time.Now().UnixNano()))
	full := append([]string{"-chdir=" + w.dir}, args...)
	full = append(full, "-input=false", "-no-color", "-var", "kubeconfig="+w.kubeconfig)
	cmd := exec.CommandContext(ctx, w.tfPath, full...)
	cmd.Env = append(os.Environ(),
		"TF_CLI_CONFIG_FILE="+w.cliConfig,
		"TF_IN_AUTOMATION=1",
		"CHECKPOINT_DISABLE=1", // no call to checkpoint-api.hashicorp.com
		telemetry.RequestLogEnv+"="+logPath,
	)
	cmd.Env = append(cmd.Env, w.env...)
	w.runs++
	profileDir := ""
	if w.profile != "" {
		profileDir = filepath.Join(w.profile, fmt.Sprintf("%s-%02d-%s", w.name, w.runs, args[0]))
		cmd.Env = append(cmd.Env, telemetry.ProfileEnv+"="+profileDir)
	}
	// Its own process group, so that an interrupted run takes the provider
	// processes terraform started along.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return run{}, err
	}
	polled := make(chan polledProviders, 1)
	stop := make(chan struct{})
	go func() { polled <- pollProviders(cmd.Process.Pid, stop) }()
	err := cmd.Wait()
	r := run{Wall: time.Since(start), Output: out.String(), ProfileDir: profileDir}
	close(stop)
	p := <-polled
	r.PolledHWMKiB, r.PolledProcs = p.hwm, len(p.pids)
	pids := make([]int, 0, len(p.pids))
	for pid := range p.pids {
		pids = append(pids, pid)
	}
	sort.Ints(pids) // PIDs grow, except when they wrap
	for _, pid := range pids {
		cpu := time.Duration(p.pids[pid] * float64(time.Second))
		r.ProviderCPU += cpu
		r.ProcessCPU = append(r.ProcessCPU, cpu)
	}
	if st := cmd.ProcessState; st != nil {
		r.TotalCPU = st.UserTime() + st.SystemTime() // includes the waited-for children
	}

	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.ExitCode = exit.ExitCode()
	case err != nil:
		return r, fmt.Errorf("terraform %s: %w\n%s", strings.Join(args, " "), err, r.Output)
	}
	if r.ExitCode != 0 && !containsInt(okCodes, r.ExitCode) {
		return r, fmt.Errorf("terraform %s: exit code %d\n%s", strings.Join(args, " "), r.ExitCode, tail(r.Output, 40))
	}
	if m := planLine.FindAllString(r.Output, -1); len(m) > 0 {
		r.Changes = m[len(m)-1]
	}
	r.Requests, err = telemetry.ReadRequestLog(logPath)
	return r, err
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

type polledProviders struct {
	hwm  int64
	pids map[int]float64 // PID → CPU seconds last seen
}

// pollProviders polls, until stop, the provider processes among the children
// of terraform's process: which ran, and the highest VmHWM seen.
func pollProviders(tfPID int, stop <-chan struct{}) polledProviders {
	out := polledProviders{pids: map[int]float64{}}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, pid := range childrenNamed(tfPID, "terraform-provi") { // comm is cut at 15 bytes
			if cpu := cpuSeconds(pid); cpu > 0 || out.pids[pid] == 0 {
				out.pids[pid] = cpu
			}
			out.hwm = max(out.hwm, statusKiB(pid, "VmHWM:"))
		}
		select {
		case <-stop:
			return out
		case <-tick.C:
		}
	}
}

// childrenNamed returns the PIDs of parent's children whose comm starts with prefix.
func childrenNamed(parent int, prefix string) []int {
	var out []int
	// /proc/<pid>/task/<tid>/children lists the children of each thread.
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", parent))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			if err == nil && strings.HasPrefix(strings.TrimSpace(string(comm)), prefix) {
				out = append(out, pid)
			}
		}
	}
	return out
}

// statusKiB reads a "Field:  N kB" line of /proc/<pid>/status.
func statusKiB(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return v
		}
	}
	return 0
}

// cpuSeconds is the user+system CPU time a process has used.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTicks
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100
