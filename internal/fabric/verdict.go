package fabric

import (
	"fmt"
	"math"
	"strings"
)

// Verdict of a run. good, acceptable and bad judge the bandwidth of the
// largest-size row; the others say why the bandwidth is not judged at all.
type Verdict string

const (
	VerdictGood       Verdict = "good"
	VerdictAcceptable Verdict = "acceptable"
	VerdictBad        Verdict = "bad"
	// VerdictOutOfBounds: the footer says "Out of bounds values : N FAILED"
	// (or a #wrong column is non-zero): the collective returned wrong data.
	VerdictOutOfBounds Verdict = "out_of_bounds"
	// VerdictTruncated: a table without its footer — the run was cut off
	// and its largest size may never have been measured.
	VerdictTruncated Verdict = "truncated"
	// VerdictNoResult: the log has no result table (or the largest-size
	// row holds no finite busbw): nothing was measured.
	VerdictNoResult Verdict = "no_result"
	// VerdictFailed: the launcher failed although its log holds a whole
	// table (set by the caller, who knows how the launcher ended).
	VerdictFailed Verdict = "failed"
)

// Bandwidth says whether the verdict judges the bandwidth (good,
// acceptable, bad) rather than a failed or unreadable run.
func (v Verdict) Bandwidth() bool {
	return v == VerdictGood || v == VerdictAcceptable || v == VerdictBad
}

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

	// Where the check ran, for the commands the checklist suggests
	// (placeholders when empty): the MPIJob's namespace and name, its
	// number of workers, and whether they use the host's network.
	Namespace   string
	JobName     string
	Workers     int
	HostNetwork bool
}

// Evaluation of one parsed run.
type Evaluation struct {
	// Verdict is the bandwidth verdict (good, acceptable, bad) of a whole,
	// correct run, or out_of_bounds, truncated, no_result: a failed run
	// never carries a bandwidth verdict.
	Verdict Verdict
	// Bandwidth is what the ratio alone says (good, acceptable, bad), ""
	// when no row could be judged; for a failed run it is information only.
	Bandwidth Verdict
	// MeasuredBusBW is the busbw of the largest-size row (its out-of-place
	// half; the in-place one when the out-of-place is not finite), GB/s,
	// MeasuredAtSize that row's size, MeasuredHalf which half.
	MeasuredBusBW  float64
	MeasuredAtSize int64
	MeasuredHalf   string
	Measured       bool // a largest-size row with a finite busbw exists
	// TableMaxBusBW is the highest busbw of the same column in any row and
	// TableMaxAtSize its size: above MeasuredBusBW when the fabric
	// collapses at large sizes.
	TableMaxBusBW  float64
	TableMaxAtSize int64
	AvgBusBW       float64 // nccl-tests' own average, GB/s, when AvgSeen
	AvgSeen        bool
	PeakGBps       float64
	Ratio          float64 // MeasuredBusBW ÷ PeakGBps
	OutOfBounds    int64
	Wrong          int64 // sum of the #wrong columns
	Rows           int
	Failed         bool
	// Reasons say why it failed (empty when it did not).
	Reasons []string
	// Notes are observations that do not fail the run by themselves (a
	// collapse at the largest sizes).
	Notes []string
}

// measured picks the busbw the verdict uses: the largest-size row's
// out-of-place busbw, or its in-place one when the first is not finite.
func measured(row Row) (float64, string, bool) {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }
	if finite(row.OutOfPlace.BusBW) {
		return row.OutOfPlace.BusBW, "out-of-place", true
	}
	if row.InPlace != nil && finite(row.InPlace.BusBW) {
		return row.InPlace.BusBW, "in-place", true
	}
	return 0, "", false
}

// Evaluate judges a parsed run (r may come with ErrTruncated or ErrNoTable:
// r.Truncated and empty rows are verdicts of their own). Out-of-bounds
// values (or #wrong > 0) fail it whatever fail_on says: wrong results make
// the bandwidth meaningless.
func Evaluate(r *Result, in Input) (Evaluation, error) {
	if r == nil {
		r = &Result{}
	}
	failOn, err := ParseFailOn(string(in.FailOn))
	if err != nil {
		return Evaluation{}, err
	}
	if _, _, err := Judge(0, in.PeakGBps, in.Thresholds); err != nil {
		return Evaluation{}, err
	}
	e := Evaluation{
		PeakGBps: in.PeakGBps, OutOfBounds: r.OutOfBounds, Wrong: r.WrongTotal, Rows: len(r.Rows),
		AvgBusBW: r.AvgBusBW, AvgSeen: r.AvgBusBWSeen && !r.Truncated,
	}
	for _, row := range r.Rows {
		if v, _, ok := measured(row); ok && v > e.TableMaxBusBW {
			e.TableMaxBusBW, e.TableMaxAtSize = v, row.SizeBytes
		}
	}
	if row, ok := r.LargestRow(); ok {
		e.MeasuredAtSize = row.SizeBytes
		e.MeasuredBusBW, e.MeasuredHalf, e.Measured = measured(row)
	}
	if e.Measured {
		e.Ratio, e.Bandwidth, _ = Judge(e.MeasuredBusBW, in.PeakGBps, in.Thresholds)
		if _, top, _ := Judge(e.TableMaxBusBW, in.PeakGBps, in.Thresholds); top != e.Bandwidth && e.TableMaxAtSize != e.MeasuredAtSize {
			e.Notes = append(e.Notes, fmt.Sprintf("busbw collapses at the largest sizes: %.2f GB/s (%.1f%%, %s) at %s, %.2f GB/s (%.1f%%) at %s, the last row",
				e.TableMaxBusBW, 100*e.TableMaxBusBW/in.PeakGBps, top, HumanSize(e.TableMaxAtSize), e.MeasuredBusBW, 100*e.Ratio, HumanSize(e.MeasuredAtSize)))
		}
	}
	wrong := r.OutOfBounds > 0 || r.FooterSeen && !r.OutOfBoundsOK || r.WrongTotal > 0
	if r.OutOfBounds > 0 || r.FooterSeen && !r.OutOfBoundsOK {
		e.Reasons = append(e.Reasons, fmt.Sprintf("Out of bounds values : %d FAILED — the collective returned wrong results, so its bandwidth means nothing", r.OutOfBounds))
	}
	if r.WrongTotal > 0 {
		e.Reasons = append(e.Reasons, fmt.Sprintf("%d wrong values in the #wrong columns", r.WrongTotal))
	}
	if r.Truncated {
		e.Reasons = append(e.Reasons, fmt.Sprintf("the table has no \"Out of bounds values\" footer: the run was cut off after %d rows (last size %s)%s",
			len(r.Rows), lastSizeHuman(r.Rows), plannedMax(r)))
	}
	switch {
	case wrong:
		e.Verdict, e.Failed = VerdictOutOfBounds, true
	case r.Truncated:
		e.Verdict, e.Failed = VerdictTruncated, true
	case len(r.Rows) == 0:
		e.Verdict, e.Failed = VerdictNoResult, true
		e.Reasons = append(e.Reasons, "the log has no result table: nothing was measured")
	case !e.Measured:
		e.Verdict, e.Failed = VerdictNoResult, true
		e.Reasons = append(e.Reasons, fmt.Sprintf("the largest-size row (%s) has no finite busbw", HumanSize(e.MeasuredAtSize)))
	default:
		e.Verdict = e.Bandwidth
		if failOn.Fails(e.Verdict) {
			e.Failed = true
			e.Reasons = append(e.Reasons, fmt.Sprintf("busbw %.2f GB/s at the largest size (%s) is %.1f%% of the %.2f GB/s peak: %s (fail_on = %s)",
				e.MeasuredBusBW, HumanSize(e.MeasuredAtSize), 100*e.Ratio, in.PeakGBps, e.Verdict, failOn))
		}
	}
	return e, nil
}

// LauncherFailed turns a bandwidth verdict into failed: the launcher ended
// badly although its log holds a whole table, so the run is no verdict on
// the fabric. why says how the launcher ended.
func (e *Evaluation) LauncherFailed(why string) {
	if e.Verdict.Bandwidth() {
		e.Verdict = VerdictFailed
	}
	e.Failed = true
	e.Reasons = append(e.Reasons, why)
}

func lastSizeHuman(rows []Row) string {
	if len(rows) == 0 {
		return "none"
	}
	return HumanSize(rows[len(rows)-1].SizeBytes)
}

func plannedMax(r *Result) string {
	if r.MaxBytes > 0 {
		return fmt.Sprintf(" of the %s it was to reach", HumanSize(r.MaxBytes))
	}
	return ""
}

// HumanSize writes a byte count as nccl-tests' sizes are usually given:
// "8 GiB" for powers of 1024, else "127926280 B".
func HumanSize(n int64) string {
	for _, u := range []struct {
		unit string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.unit)
		}
	}
	return fmt.Sprintf("%d B", n)
}
