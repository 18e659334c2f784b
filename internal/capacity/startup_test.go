package capacity

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestStartupProbeBudget(t *testing.T) {
	const (
		mib = 1 << 20
		gib = 1 << 30
	)
	for _, tc := range []struct {
		name          string
		in            Startup
		threshold     int32
		period        int32
		budgetSeconds float64
		err           string
	}{
		// The package comment's example: 70B in bf16 from a shared volume.
		{name: "70B bf16 from a PVC", in: Startup{ModelBytes: 140e9, BytesPerSecond: 200 * mib}, threshold: 146, period: 10, budgetSeconds: 1455.14},
		{name: "70B bf16 from node-local NVMe", in: Startup{ModelBytes: 140e9, BytesPerSecond: gib}, threshold: 39, period: 10, budgetSeconds: 380.77},
		// 8B in bf16 (16 GB) at 500 MB/s, no overhead, safety 1.5, 5 s period:
		// 32 s × 1.5 = 48 s → ⌈9.6⌉ = 10.
		{name: "8B, explicit parameters", in: Startup{ModelBytes: 16e9, BytesPerSecond: 500e6, Overhead: -1, Safety: 1.5, PeriodSeconds: 5}, threshold: 10, period: 5, budgetSeconds: 48},
		// An exact multiple is not rounded up: 100 s × 1 / 10 = 10.
		{name: "exact multiple", in: Startup{ModelBytes: 100e6, BytesPerSecond: 1e6, Overhead: -1, Safety: 1}, threshold: 10, period: 10, budgetSeconds: 100},
		// Nothing to read still allows the overhead: 60 s × 2 / 10 = 12.
		{name: "empty model", in: Startup{BytesPerSecond: 1}, threshold: 12, period: 10, budgetSeconds: 120},
		{name: "at least one probe", in: Startup{ModelBytes: 1, BytesPerSecond: 1e9, Overhead: -1}, threshold: 1, period: 10, budgetSeconds: 2e-9},
		{name: "zero throughput", in: Startup{ModelBytes: 1, BytesPerSecond: 0}, err: "positive"},
		{name: "NaN throughput", in: Startup{ModelBytes: 1, BytesPerSecond: math.NaN()}, err: "positive"},
		{name: "negative size", in: Startup{ModelBytes: -1, BytesPerSecond: 1}, err: "negative"},
		{name: "safety below 1", in: Startup{ModelBytes: 1, BytesPerSecond: 1, Safety: 0.5}, err: "at least 1"},
		{name: "negative period", in: Startup{ModelBytes: 1, BytesPerSecond: 1, PeriodSeconds: -10}, err: "period"},
		{name: "too long for int32", in: Startup{ModelBytes: math.MaxInt64, BytesPerSecond: 1, PeriodSeconds: 1}, err: "does not fit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := StartupProbeBudget(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("want error containing %q, got %v (%+v)", tc.err, err, b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.FailureThreshold != tc.threshold || b.PeriodSeconds != tc.period || math.Abs(b.BudgetSeconds-tc.budgetSeconds) > 0.01 {
				t.Errorf("got %+v, want threshold %d period %d budget %.2f", b, tc.threshold, tc.period, tc.budgetSeconds)
			}
			// The invariant the probe exists for.
			if b.Allowed().Seconds() < b.BudgetSeconds {
				t.Errorf("threshold × period = %s < budget %.2f s", b.Allowed(), b.BudgetSeconds)
			}
			if b.Allowed() >= time.Duration(b.BudgetSeconds*float64(time.Second))+time.Duration(b.PeriodSeconds)*time.Second {
				t.Errorf("threshold × period = %s exceeds the budget by a whole period or more", b.Allowed())
			}
		})
	}
}
