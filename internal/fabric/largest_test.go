package fabric

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// The rule on the invented logs of testdata/made: the busbw of the last row
// (the largest size) against NICs × Gb/s ÷ 8; out-of-bounds values and a
// truncated table are verdicts of their own.
func TestVerdictFromTheLargestRow(t *testing.T) {
	p400, _ := PeakBusBW(8, 400)
	p100, _ := PeakBusBW(4, 200)
	for _, tc := range []struct {
		file      string
		in        Input
		parseErr  error
		verdict   Verdict
		bandwidth Verdict // what the ratio alone says
		failed    bool
		busbw     float64
		at        int64
		tableMax  float64
		avg       float64 // 0: no average may be shown
		want      []string
		notWant   []string
	}{
		{
			file: "good_8x400_ib.log", in: Input{PeakGBps: p400, NICsPerNode: 8},
			verdict: VerdictGood, bandwidth: VerdictGood, busbw: 372.40, at: 8 << 30, tableMax: 372.40, avg: 130.595,
			want: []string{"verdict: good — busbw 372.40 GB/s at the largest size (8 GiB, the table's last row) is 93.1% of the 400.00 GB/s peak (8 NICs × 400 Gb/s ÷ 8)"},
		},
		{
			// The highest busbw (97.02 at 2 GiB) would say good; the last row says bad.
			file: "collapse_4x200_roce.log", in: Input{PeakGBps: p100, NICsPerNode: 4},
			verdict: VerdictBad, bandwidth: VerdictBad, failed: true, busbw: 61.04, at: 8 << 30, tableMax: 97.02, avg: 74.64,
			want: []string{
				"verdict: bad — busbw 61.04 GB/s at the largest size (8 GiB, the table's last row) is 61.0% of the 100.00 GB/s peak",
				"- busbw 61.04 GB/s at the largest size (8 GiB) is 61.0% of the 100.00 GB/s peak: bad (fail_on = bad)",
				"- busbw collapses at the largest sizes: 97.02 GB/s (97.0%, good) at 2 GiB, 61.04 GB/s (61.0%) at 8 GiB, the last row",
				"* 3. MTU and GID index",
			},
			notWant: []string{"verdict: good"},
		},
		{
			file: "collapse_4x200_roce.log", in: Input{PeakGBps: p100, NICsPerNode: 4, FailOn: FailOnNever},
			verdict: VerdictBad, bandwidth: VerdictBad, busbw: 61.04, at: 8 << 30, tableMax: 97.02, avg: 74.64,
		},
		{
			file: "acceptable_4x200_ib.log", in: Input{PeakGBps: p100, NICsPerNode: 4},
			verdict: VerdictAcceptable, bandwidth: VerdictAcceptable, busbw: 85.31, at: 8 << 30, tableMax: 85.57, avg: 72.0757,
			want: []string{"verdict: acceptable — busbw 85.31 GB/s at the largest size (8 GiB, the table's last row) is 85.3% of the 100.00 GB/s peak (4 NICs × 200 Gb/s ÷ 8) (good ≥ 90%, acceptable ≥ 80%)"},
			// 85.57 at 4 GiB is acceptable too: no collapse.
			notWant: []string{"busbw collapses at the largest sizes"},
		},
		{
			file: "acceptable_4x200_ib.log", in: Input{PeakGBps: p100, NICsPerNode: 4, FailOn: FailOnAcceptable},
			verdict: VerdictAcceptable, bandwidth: VerdictAcceptable, failed: true, busbw: 85.31, at: 8 << 30, tableMax: 85.57, avg: 72.0757,
			want: []string{"85.3% of the 100.00 GB/s peak: acceptable (fail_on = acceptable)"},
		},
		{
			// 92.7 % would be good: the out-of-bounds footer makes it no verdict on bandwidth.
			file: "oob_failed_4x200_ib.log", in: Input{PeakGBps: p100, NICsPerNode: 4, FailOn: FailOnNever},
			verdict: VerdictOutOfBounds, bandwidth: VerdictGood, failed: true, busbw: 92.70, at: 8 << 30, tableMax: 92.80, avg: 76.09,
			want: []string{
				"verdict: out_of_bounds — 3 out-of-bounds values, 3 wrong: the bandwidth is not judged (busbw 92.70 GB/s at the largest size (8 GiB, the table's last row) is 92.7% of the 100.00 GB/s peak",
				"- Out of bounds values : 3 FAILED",
				"- 3 wrong values in the #wrong columns",
				"Wrong values: do not trust the bandwidth",
			},
			notWant: []string{"good", "average"},
		},
		{
			// Cut off after the 1 GiB row (92.70 GB/s) of an 8 GiB run.
			file: "truncated_4x200_ib.log", in: Input{PeakGBps: p100, NICsPerNode: 4}, parseErr: ErrTruncated,
			verdict: VerdictTruncated, bandwidth: VerdictGood, failed: true, busbw: 92.70, at: 1 << 30, tableMax: 92.70,
			want: []string{
				"verdict: truncated — the table stops after 11 rows without its footer: the bandwidth is not judged (the last row read, 1 GiB, had busbw 92.70 GB/s: 92.7% of the 100.00 GB/s peak",
				"- the table has no \"Out of bounds values\" footer: the run was cut off after 11 rows (last size 1 GiB) of the 8 GiB it was to reach",
			},
			notWant: []string{"good", "average"},
		},
	} {
		t.Run(tc.file+"/"+string(tc.in.FailOn), func(t *testing.T) {
			r, err := Parse(readMade(t, tc.file))
			if !errors.Is(err, tc.parseErr) || tc.parseErr == nil && err != nil {
				t.Fatalf("parse err = %v, want %v", err, tc.parseErr)
			}
			tc.in.Thresholds = DefaultThresholds()
			ev, eerr := Evaluate(r, tc.in)
			if eerr != nil {
				t.Fatal(eerr)
			}
			if ev.Verdict != tc.verdict || ev.Bandwidth != tc.bandwidth || ev.Failed != tc.failed {
				t.Errorf("verdict %s (bandwidth %s) failed %v, want %s (%s) %v; reasons %q", ev.Verdict, ev.Bandwidth, ev.Failed,
					tc.verdict, tc.bandwidth, tc.failed, ev.Reasons)
			}
			if !ev.Measured || ev.MeasuredBusBW != tc.busbw || ev.MeasuredAtSize != tc.at || ev.MeasuredHalf != "out-of-place" ||
				ev.TableMaxBusBW != tc.tableMax || math.Abs(ev.Ratio-tc.busbw/tc.in.PeakGBps) > 1e-12 {
				t.Errorf("measured %v at %d (%s), table max %v, ratio %v; want %v at %d, max %v", ev.MeasuredBusBW, ev.MeasuredAtSize,
					ev.MeasuredHalf, ev.TableMaxBusBW, ev.Ratio, tc.busbw, tc.at, tc.tableMax)
			}
			if ev.AvgSeen != (tc.avg != 0) || ev.AvgBusBW != tc.avg && tc.avg != 0 {
				t.Errorf("average %v (seen %v), want %v", ev.AvgBusBW, ev.AvgSeen, tc.avg)
			}
			var cause error
			if ev.Failed {
				cause = errors.New("NCCL check default/fabric: " + string(ev.Verdict))
			}
			msg := Message(r, &ev, tc.in, cause)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q:\n%s", w, msg)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(msg, w) {
					t.Errorf("message has %q:\n%s", w, msg)
				}
			}
			for i, title := range ordered {
				if !strings.Contains(msg, title) || i > 0 && strings.Index(msg, title) < strings.Index(msg, ordered[i-1]) {
					t.Errorf("checklist item %q missing or out of order:\n%s", title, msg)
				}
			}
		})
	}
}

// The largest size is the row judged even when a log holds a soak before a
// short correctness pass; a size measured twice is judged on its later row.
func TestLargestRow(t *testing.T) {
	row := func(size int64, busbw float64) Row {
		return Row{SizeBytes: size, OutOfPlace: Measurement{BusBW: busbw}}
	}
	r := &Result{Rows: []Row{row(1<<30, 90), row(8<<30, 70), row(128<<20, 50)}}
	if got, ok := r.LargestRow(); !ok || got.SizeBytes != 8<<30 {
		t.Errorf("largest = %+v", got)
	}
	r.Rows = append(r.Rows, row(8<<30, 75))
	if got, _ := r.LargestRow(); got.OutOfPlace.BusBW != 75 {
		t.Errorf("a size measured twice: %+v, want the later row", got)
	}
	if _, ok := (&Result{}).LargestRow(); ok {
		t.Error("a largest row without rows")
	}
	// An out-of-place busbw that is not a number falls back to the in-place one.
	r = &Result{Rows: []Row{{SizeBytes: 8, OutOfPlace: Measurement{BusBW: math.Inf(1)}, InPlace: &Measurement{BusBW: 0.01}}}, FooterSeen: true, OutOfBoundsOK: true}
	ev, err := Evaluate(r, Input{PeakGBps: 100, Thresholds: DefaultThresholds()})
	if err != nil || ev.MeasuredHalf != "in-place" || ev.MeasuredBusBW != 0.01 || ev.Verdict != VerdictBad {
		t.Errorf("ev %+v err %v", ev, err)
	}
	r.Rows[0].InPlace = nil
	if ev, _ := Evaluate(r, Input{PeakGBps: 100, Thresholds: DefaultThresholds()}); ev.Verdict != VerdictNoResult || !ev.Failed {
		t.Errorf("no finite busbw: %+v", ev)
	}
}

// A launcher that failed after a whole table, and a log without a table,
// are verdicts too — never a bandwidth word.
func TestFailedAndEmptyRuns(t *testing.T) {
	in := Input{PeakGBps: 400, NICsPerNode: 8, Thresholds: DefaultThresholds()}
	r, _ := Parse(readMade(t, "good_8x400_ib.log"))
	ev, _ := Evaluate(r, in)
	ev.LauncherFailed("the launcher pod is Failed")
	if ev.Verdict != VerdictFailed || !ev.Failed || ev.Bandwidth != VerdictGood {
		t.Errorf("%+v", ev)
	}
	if h := Headline(&ev, in); !strings.HasPrefix(h, "verdict: failed — the launcher failed: the bandwidth is not judged (busbw 372.40 GB/s") {
		t.Errorf("headline %q", h)
	}
	r, err := Parse("ssh: connect to host fabric-worker-1.fabric.default.svc port 22: Connection refused\n")
	if !errors.Is(err, ErrNoTable) {
		t.Fatal(err)
	}
	ev, _ = Evaluate(r, in)
	ev.LauncherFailed("the launcher pod is Failed")
	if ev.Verdict != VerdictNoResult || Headline(&ev, in) != "verdict: no_result — nothing was measured" {
		t.Errorf("%+v: %q", ev, Headline(&ev, in))
	}
	if _, err := Evaluate(r, Input{PeakGBps: 0, Thresholds: DefaultThresholds()}); err == nil {
		t.Error("a zero peak accepted")
	}
}

func TestHumanSize(t *testing.T) {
	for n, want := range map[int64]string{8: "8 B", 1024: "1 KiB", 1 << 20: "1 MiB", 8 << 30: "8 GiB", 16 << 30: "16 GiB", 127926280: "127926280 B", 1536: "1536 B"} {
		if got := HumanSize(n); got != want {
			t.Errorf("HumanSize(%d) = %q, want %q", n, got, want)
		}
	}
}
