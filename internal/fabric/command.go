package fabric

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Collectives are the nccl-tests binaries a check may run, sorted.
var Collectives = []string{
	"all_gather_perf", "all_reduce_perf", "alltoall_perf", "broadcast_perf", "gather_perf",
	"hypercube_perf", "reduce_perf", "reduce_scatter_perf", "scatter_perf", "sendrecv_perf",
}

// DefaultBinary is the collective a check runs by default.
const DefaultBinary = "all_reduce_perf"

// DefaultBinaryDir is where the default image keeps the nccl-tests binaries.
const DefaultBinaryDir = "/opt/nccl_tests/build"

// Test is one nccl-tests invocation. Zero values take the defaults noted.
type Test struct {
	Binary      string // one of Collectives; default all_reduce_perf
	BinaryDir   string // default DefaultBinaryDir
	MinBytes    string // -b, nccl-tests size syntax ("8", "1M", "8G"); default "8"
	MaxBytes    string // -e; default "8G"
	StepFactor  int64  // -f; default 2
	GPUsPerRank int64  // -g; default 1 (one MPI rank per GPU)
	Iters       int64  // -n; default 20
	Warmup      int64  // -w; default 5
	Check       *bool  // -c 1/0; default on (the out-of-bounds count needs it)
}

var reSize = regexp.MustCompile(`^([0-9]+)([KMG]?)$`)

// ParseSize reads an nccl-tests size ("8", "128M", "8G"; K/M/G are powers of 1024).
func ParseSize(s string) (int64, error) {
	m := reSize.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("size %q must be a whole number of bytes with an optional K, M or G suffix", s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %v", s, err)
	}
	shift := map[string]uint{"": 0, "K": 10, "M": 20, "G": 30}[m[2]]
	if n > (1<<62)>>shift {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n << shift, nil
}

func (t Test) withDefaults() Test {
	if t.Binary == "" {
		t.Binary = DefaultBinary
	}
	if t.BinaryDir == "" {
		t.BinaryDir = DefaultBinaryDir
	}
	if t.MinBytes == "" {
		t.MinBytes = "8"
	}
	if t.MaxBytes == "" {
		t.MaxBytes = "8G"
	}
	if t.StepFactor == 0 {
		t.StepFactor = 2
	}
	if t.GPUsPerRank == 0 {
		t.GPUsPerRank = 1
	}
	if t.Iters == 0 {
		t.Iters = 20
	}
	if t.Warmup == 0 {
		t.Warmup = 5
	}
	if t.Check == nil {
		on := true
		t.Check = &on
	}
	return t
}

// Validate names the first bad field (by its flag and its attribute-like name).
func (t Test) Validate() error {
	t = t.withDefaults()
	i := sort.SearchStrings(Collectives, t.Binary)
	if i == len(Collectives) || Collectives[i] != t.Binary {
		return fmt.Errorf("binary must be one of %s, not %q", strings.Join(Collectives, ", "), t.Binary)
	}
	if !path.IsAbs(t.BinaryDir) {
		return fmt.Errorf("binary directory must be an absolute path, not %q", t.BinaryDir)
	}
	lo, err := ParseSize(t.MinBytes)
	if err != nil {
		return fmt.Errorf("min_bytes (-b): %w", err)
	}
	hi, err := ParseSize(t.MaxBytes)
	if err != nil {
		return fmt.Errorf("max_bytes (-e): %w", err)
	}
	if lo < 1 || lo > hi {
		return fmt.Errorf("min_bytes (-b) %s must be at least 1 and at most max_bytes (-e) %s", t.MinBytes, t.MaxBytes)
	}
	if t.StepFactor < 2 {
		return fmt.Errorf("step_factor (-f) must be at least 2, not %d", t.StepFactor)
	}
	if t.GPUsPerRank < 1 {
		return fmt.Errorf("GPUs per rank (-g) must be at least 1, not %d", t.GPUsPerRank)
	}
	if t.Iters < 1 {
		return fmt.Errorf("iterations (-n) must be at least 1, not %d", t.Iters)
	}
	if t.Warmup < 0 {
		return fmt.Errorf("warmup iterations (-w) must not be negative, not %d", t.Warmup)
	}
	return nil
}

// Args is the test's command line: the binary's path and its flags.
func (t Test) Args() ([]string, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	t = t.withDefaults()
	c := "0"
	if *t.Check {
		c = "1"
	}
	return []string{
		path.Join(t.BinaryDir, t.Binary),
		"-b", t.MinBytes, "-e", t.MaxBytes, "-f", strconv.FormatInt(t.StepFactor, 10),
		"-g", strconv.FormatInt(t.GPUsPerRank, 10),
		"-n", strconv.FormatInt(t.Iters, 10), "-w", strconv.FormatInt(t.Warmup, 10),
		"-c", c,
	}, nil
}

// Launch is how the test is spread: Nodes × GPUsPerNode GPUs, one MPI rank
// per GPU (each rank drives Test.GPUsPerRank GPUs, 1 by default).
type Launch struct {
	Nodes       int64
	GPUsPerNode int64
	// Env is passed to every rank with -x (NCCL_DEBUG, NCCL_IB_HCA, …).
	Env map[string]string
	// MPIRun is the launcher binary; default "mpirun" (Open MPI).
	MPIRun string
}

var reEnvName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Ranks is the number of MPI processes: nodes × GPUs per node ÷ GPUs per rank.
func (l Launch) Ranks(t Test) (int64, error) {
	t = t.withDefaults()
	if l.Nodes < 1 {
		return 0, fmt.Errorf("nodes must be at least 1, not %d", l.Nodes)
	}
	if l.GPUsPerNode < 1 {
		return 0, fmt.Errorf("gpus_per_node must be at least 1, not %d", l.GPUsPerNode)
	}
	if t.GPUsPerRank < 1 || l.GPUsPerNode%t.GPUsPerRank != 0 {
		return 0, fmt.Errorf("gpus_per_node (%d) must be a multiple of the GPUs per rank (-g %d)", l.GPUsPerNode, t.GPUsPerRank)
	}
	return l.Nodes * l.GPUsPerNode / t.GPUsPerRank, nil
}

// MPIRunArgs is the launcher's command line for Open MPI (as the MPI
// Operator's launcher runs it, with the hostfile it mounts): N × G ranks,
// G ÷ -g per node, no CPU binding, each Env entry exported with -x in name
// order, then the test's command line.
func MPIRunArgs(l Launch, t Test) ([]string, error) {
	ranks, err := l.Ranks(t)
	if err != nil {
		return nil, err
	}
	test, err := t.Args()
	if err != nil {
		return nil, err
	}
	perNode := l.GPUsPerNode / t.withDefaults().GPUsPerRank
	mpirun := l.MPIRun
	if mpirun == "" {
		mpirun = "mpirun"
	}
	args := []string{
		mpirun, "--allow-run-as-root",
		"-np", strconv.FormatInt(ranks, 10),
		"--map-by", "ppr:" + strconv.FormatInt(perNode, 10) + ":node",
		"--bind-to", "none",
	}
	names := make([]string, 0, len(l.Env))
	for k := range l.Env {
		if !reEnvName.MatchString(k) {
			return nil, fmt.Errorf("environment variable name %q is not valid", k)
		}
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		args = append(args, "-x", k+"="+l.Env[k])
	}
	return append(args, test...), nil
}
