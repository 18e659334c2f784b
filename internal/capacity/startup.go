package capacity

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Startup probes for model servers. A replica is not ready until it has read
// its weights, so its startupProbe must allow at least the load time, and no
// livenessProbe may act before that (Kubernetes holds liveness and readiness
// probes until the startup probe has succeeded, which is why the budget
// belongs on the startup probe and nowhere else). The budget is
//
//	load      = size ÷ throughput
//	budget    = (load + overhead) × safety
//	threshold = ⌈budget ÷ period⌉        so threshold × period ≥ budget
//
// Example: 70B parameters in bf16 are 140 GB. Read from a shared volume at an
// assumed 200 MiB/s that is 140e9 ÷ 209,715,200 ≈ 668 s; with 60 s of
// overhead (process start, CUDA context, graph capture) and a safety factor of
// 2, the budget is (668 + 60) × 2 ≈ 1,455 s, so with a 10 s period the probe
// may fail 146 times (1,460 s, about 24 minutes) before the kubelet restarts
// the container. From a node-local NVMe at 1 GiB/s the same model needs a
// threshold of 39 (390 s).

// Default startup probe parameters.
const (
	DefaultStartupSafety        = 2.0
	DefaultStartupPeriodSeconds = 10
	DefaultStartupOverhead      = 60 * time.Second
)

// Startup describes a replica's start.
type Startup struct {
	// ModelBytes is the size of the weights the replica reads.
	ModelBytes int64
	// BytesPerSecond is the read throughput assumed for one replica.
	BytesPerSecond float64
	// Overhead is the start time that does not depend on the model size;
	// zero means DefaultStartupOverhead, a negative value none.
	Overhead time.Duration
	// Safety multiplies the expected time, ≥ 1; zero means DefaultStartupSafety.
	Safety float64
	// PeriodSeconds is the probe's period; zero means DefaultStartupPeriodSeconds.
	PeriodSeconds int32
}

// StartupBudget is the arithmetic's result.
type StartupBudget struct {
	LoadSeconds      float64 // ModelBytes ÷ BytesPerSecond
	BudgetSeconds    float64 // (load + overhead) × safety
	PeriodSeconds    int32
	FailureThreshold int32 // ⌈budget ÷ period⌉, at least 1
}

// Allowed is how long the probe lets the replica start: threshold × period,
// never less than BudgetSeconds.
func (b StartupBudget) Allowed() time.Duration {
	return time.Duration(b.FailureThreshold) * time.Duration(b.PeriodSeconds) * time.Second
}

// StartupProbeBudget computes the failure threshold of a startup probe that
// lets a replica read its weights.
func StartupProbeBudget(s Startup) (StartupBudget, error) {
	if s.ModelBytes < 0 {
		return StartupBudget{}, fmt.Errorf("model size %d bytes is negative", s.ModelBytes)
	}
	if !(s.BytesPerSecond > 0) || math.IsInf(s.BytesPerSecond, 0) {
		return StartupBudget{}, fmt.Errorf("read throughput must be a positive number of bytes per second, got %v", s.BytesPerSecond)
	}
	safety := s.Safety
	if safety == 0 {
		safety = DefaultStartupSafety
	}
	if !(safety >= 1) || math.IsInf(safety, 0) {
		return StartupBudget{}, fmt.Errorf("safety factor must be at least 1, got %v", s.Safety)
	}
	period := s.PeriodSeconds
	if period == 0 {
		period = DefaultStartupPeriodSeconds
	}
	if period < 1 {
		return StartupBudget{}, errors.New("probe period must be at least 1 second")
	}
	overhead := s.Overhead
	if overhead == 0 {
		overhead = DefaultStartupOverhead
	}
	if overhead < 0 {
		overhead = 0
	}
	load := float64(s.ModelBytes) / s.BytesPerSecond
	budget := (load + overhead.Seconds()) * safety
	threshold := math.Ceil(budget / float64(period))
	if threshold < 1 {
		threshold = 1
	}
	if threshold > math.MaxInt32 {
		return StartupBudget{}, fmt.Errorf("a startup budget of %.0f s does not fit a probe's failure threshold with a %d s period", budget, period)
	}
	return StartupBudget{LoadSeconds: load, BudgetSeconds: budget, PeriodSeconds: period, FailureThreshold: int32(threshold)}, nil
}
