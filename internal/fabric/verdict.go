package fabric

import (
	"fmt"
	"math"
	"strings"
)

// Verdict of a run.
type Verdict string

const (
	VerdictGood       Verdict = "good"
	VerdictAcceptable Verdict = "acceptable"
	VerdictBad        Verdict = "bad"
)

// FailOn says which verdict fails the run (the apply).
type FailOn string

const (
	FailOnBad        FailOn = "bad"        // default: only a bad verdict fails
	FailOnAcceptable FailOn = "acceptable" // acceptable and bad fail
	FailOnNever      FailOn = "never"      // record only (out-of-bounds values still fail)
)

// FailOnValues are the accepted fail_on values, default first.
func FailOnValues() []string {
	return []string{string(FailOnBad), string(FailOnAcceptable), string(FailOnNever)}
}

// ParseFailOn reads fail_on; "" is the default (bad).
func ParseFailOn(s string) (FailOn, error) {
	switch FailOn(s) {
	case "":
		return FailOnBad, nil
	case FailOnBad, FailOnAcceptable, FailOnNever:
		return FailOn(s), nil
	}
	return "", fmt.Errorf("fail_on must be one of %s, not %q", strings.Join(FailOnValues(), ", "), s)
}

// Default thresholds (issue #14: ≥ 90 % good, 80–90 % acceptable, < 80 % bad).
const (
	DefaultGoodRatio       = 0.90
	DefaultAcceptableRatio = 0.80
)

// Thresholds of the verdict, as fractions of the peak.
type Thresholds struct {
	Good       float64
	Acceptable float64
}

// DefaultThresholds are 0.90 and 0.80.
func DefaultThresholds() Thresholds {
	return Thresholds{Good: DefaultGoodRatio, Acceptable: DefaultAcceptableRatio}
}

// WithDefaults fills a zero Good or Acceptable with its default.
func (t Thresholds) WithDefaults() Thresholds {
	if t.Good == 0 {
		t.Good = DefaultGoodRatio
	}
	if t.Acceptable == 0 {
		t.Acceptable = DefaultAcceptableRatio
	}
	return t
}

// Validate: 0 < acceptable ≤ good ≤ 1 (a threshold above 1 would ask for
// more than the line rate, which only tree or in-network reduction reach).
func (t Thresholds) Validate() error {
	if math.IsNaN(t.Good) || math.IsNaN(t.Acceptable) {
		return fmt.Errorf("thresholds must be numbers")
	}
	if t.Acceptable <= 0 || t.Acceptable > 1 {
		return fmt.Errorf("acceptable_ratio must be in (0, 1], not %g", t.Acceptable)
	}
	if t.Good <= 0 || t.Good > 1 {
		return fmt.Errorf("good_ratio must be in (0, 1], not %g", t.Good)
	}
	if t.Acceptable > t.Good {
		return fmt.Errorf("acceptable_ratio (%g) must not exceed good_ratio (%g)", t.Acceptable, t.Good)
	}
	return nil
}

// PeakBusBW is the theoretical bus bandwidth of a node's NICs in GB/s:
// nics × Gb/s ÷ 8. 8 × 400 Gb/s → 400 GB/s; 4 × 200 → 100; 1 × 100 → 12.5.
func PeakBusBW(nicsPerNode int64, nicGbps float64) (float64, error) {
	if nicsPerNode < 1 {
		return 0, fmt.Errorf("nics_per_node must be at least 1, not %d", nicsPerNode)
	}
	if !(nicGbps > 0) || math.IsInf(nicGbps, 0) {
		return 0, fmt.Errorf("nic_gbps must be a positive number, not %g", nicGbps)
	}
	return float64(nicsPerNode) * nicGbps / 8, nil
}

// ratioEpsilon absorbs float rounding so that 80 ÷ 100 counts as 0.80.
const ratioEpsilon = 1e-9

// Judge compares a measured busbw (GB/s) with the peak.
func Judge(busbw, peak float64, t Thresholds) (ratio float64, v Verdict, err error) {
	if err := t.Validate(); err != nil {
		return 0, "", err
	}
	if !(peak > 0) || math.IsInf(peak, 0) {
		return 0, "", fmt.Errorf("peak bus bandwidth must be a positive number of GB/s, not %g", peak)
	}
	if math.IsNaN(busbw) || math.IsInf(busbw, 0) || busbw < 0 {
		return 0, "", fmt.Errorf("measured bus bandwidth must be a non-negative number, not %g", busbw)
	}
	ratio = busbw / peak
	switch {
	case ratio+ratioEpsilon >= t.Good:
		v = VerdictGood
	case ratio+ratioEpsilon >= t.Acceptable:
		v = VerdictAcceptable
	default:
		v = VerdictBad
	}
	return ratio, v, nil
}

// Fails says whether a verdict fails the run under fail_on.
func (f FailOn) Fails(v Verdict) bool {
	switch f {
	case FailOnNever:
		return false
	case FailOnAcceptable:
		return v != VerdictGood
	default:
		return v == VerdictBad
	}
}

// Input of Evaluate.
type Input struct {
	PeakGBps    float64 // theoretical peak busbw, GB/s (PeakBusBW or peak_busbw_gbps)
	NICsPerNode int64   // 0 when the peak was given explicitly; used by the checklist
	Thresholds  Thresholds
	FailOn      FailOn
}

// Evaluation of one parsed run.
type Evaluation struct {
	MeasuredBusBW float64 // the table's highest busbw, GB/s
	AvgBusBW      float64 // nccl-tests' own average, GB/s
	PeakGBps      float64
	Ratio         float64 // MeasuredBusBW ÷ PeakGBps
	Verdict       Verdict
	OutOfBounds   int64
	Failed        bool
	// Reasons say why it failed (empty when it did not).
	Reasons []string
}

// Evaluate judges a parsed run. Out-of-bounds values (or #wrong > 0) fail
// it whatever fail_on says: wrong results make the bandwidth meaningless.
func Evaluate(r *Result, in Input) (Evaluation, error) {
	if r == nil {
		return Evaluation{}, fmt.Errorf("no result to evaluate")
	}
	failOn, err := ParseFailOn(string(in.FailOn))
	if err != nil {
		return Evaluation{}, err
	}
	ratio, v, err := Judge(r.MaxBusBW, in.PeakGBps, in.Thresholds)
	if err != nil {
		return Evaluation{}, err
	}
	e := Evaluation{
		MeasuredBusBW: r.MaxBusBW, AvgBusBW: r.AvgBusBW, PeakGBps: in.PeakGBps,
		Ratio: ratio, Verdict: v, OutOfBounds: r.OutOfBounds,
	}
	if r.OutOfBounds > 0 || !r.OutOfBoundsOK && r.FooterSeen {
		e.Failed = true
		e.Reasons = append(e.Reasons, fmt.Sprintf("%d out-of-bounds values: the collective returned wrong results", r.OutOfBounds))
	} else if r.WrongTotal > 0 {
		e.Failed = true
		e.Reasons = append(e.Reasons, fmt.Sprintf("%d wrong values in the #wrong columns", r.WrongTotal))
	}
	if failOn.Fails(v) {
		e.Failed = true
		e.Reasons = append(e.Reasons, fmt.Sprintf("busbw %.2f GB/s is %.1f%% of the %.2f GB/s peak: %s (fail_on = %s)",
			e.MeasuredBusBW, 100*ratio, in.PeakGBps, v, failOn))
	}
	return e, nil
}
