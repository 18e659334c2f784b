// Package fabric reads the output of nccl-tests (all_reduce_perf and the other
// collectives) and judges it against the fabric's theoretical peak. Pure
// functions, no I/O: the aiplatform_nccl_check resource hands it the
// launcher's log and gets back the numbers, the verdict and a checklist.
//
// The arithmetic:
//
//	peak busbw (GB/s) = nics_per_node × nic_gbps ÷ 8
//	ratio             = measured busbw ÷ peak busbw
//	verdict           = good when ratio ≥ good_ratio (0.90),
//	                    acceptable when ratio ≥ acceptable_ratio (0.80),
//	                    bad otherwise
//
// The measured busbw is the out-of-place busbw of the table's largest-size
// row — its last row, as practitioners read all_reduce_perf — not the
// highest busbw of any row and not nccl-tests' "Avg bus bandwidth": the
// largest messages are bandwidth-bound, the small ones latency-bound, and a
// fabric that reaches its peak at 2 GiB but collapses at 8 GiB (congestion,
// lossless settings, a degraded link) is what slows training. busbw is what
// nccl-tests derives from algbw so that it compares with link speed: for
// all_reduce, busbw = algbw × 2(n−1)/n with n ranks. An out-of-bounds footer
// and a truncated table are verdicts of their own, never a bandwidth
// verdict. See docs/guides/fabric-check.md.
package fabric

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// ErrTruncated: the log has a result table (or its column header) but no
// "Out of bounds values" footer — the run was cut off (timeout, crash, a
// killed launcher) and its numbers cannot be trusted.
var ErrTruncated = errors.New("nccl-tests output is truncated: the result table has no \"Out of bounds values\" footer")

// ErrNoTable: the log has no result table at all (the test never got to
// measure: launcher, bootstrap or NCCL init failure).
var ErrNoTable = errors.New("nccl-tests output has no result table")

// Measurement is one half (out-of-place or in-place) of a table row.
type Measurement struct {
	TimeUS float64 // time of one operation, microseconds
	AlgBW  float64 // algorithm bandwidth, GB/s
	BusBW  float64 // bus bandwidth, GB/s
	// Wrong is the #wrong count (nccl-tests ≥ 2.x) — or, for old versions
	// whose column is "error", 1 when the maximum error was non-zero.
	// -1 when the column says N/A (validation off, -c 0) or is absent.
	Wrong int64
	// MaxError is the old "error" column's value (0 when absent).
	MaxError float64
}

// Row is one size of the result table.
type Row struct {
	SizeBytes  int64
	Count      int64
	Type       string // float, half, …
	Redop      string // sum, max, none, … ("" when the version has no column)
	Root       int64  // -1 when not rooted or the version has no column
	OutOfPlace Measurement
	InPlace    *Measurement // nil when the row has only the out-of-place half
}

// Rank is one "# Rank …" line of the header.
type Rank struct {
	Rank   int64
	Group  int64
	PID    int64
	Host   string
	Device int64
	BusID  string
	GPU    string
}

// Result is everything read from one log. On ErrTruncated Parse still returns
// what it read (header, ranks, rows, transport).
type Result struct {
	TestsVersion string // "2.20.0" from "# nccl-tests version 2.20.0 …"; "" when absent
	NCCLVersion  string // "2.25.1+cuda12.4" from "NCCL version …", or "2.31.2" from nccl-library=23102
	Collective   string // "all_reduce_perf" when the log names it
	NThread      int64
	NGPUs        int64 // GPUs per process (-g)
	MinBytes     int64
	MaxBytes     int64
	Ranks        []Rank
	Hosts        []string // distinct hosts of the rank lines, in order of appearance
	Rows         []Row

	// OutOfBounds is the "# Out of bounds values : N …" count, summed over
	// the runs when the log holds several (a short correctness run, then a
	// soak); OutOfBoundsOK is true when every footer said OK.
	OutOfBounds   int64
	OutOfBoundsOK bool
	FooterSeen    bool
	Runs          int     // footers seen
	AvgBusBW      float64 // "# Avg bus bandwidth : X" of the last run
	AvgBusBWSeen  bool
	WrongTotal    int64 // sum of the #wrong columns (≥ 0 values only)
	// MaxBusBW is the table's highest busbw (either half of a row), GB/s,
	// and MaxBusBWAtSize its row's size: not what the verdict uses (that is
	// the largest-size row, LargestRow), but what tells a collapse at the
	// largest sizes from a fabric that never got there.
	MaxBusBW       float64
	MaxBusBWAtSize int64
	// Truncated: Parse returned ErrTruncated (a table without its footer).
	Truncated bool

	Net Net // what NCCL_DEBUG=INFO lines say about the transport

	// LauncherErrors are lines that show the launcher (mpirun, ssh, the
	// bootstrap) failing to reach another pod: name resolution, refused or
	// unreachable connections. Capped at maxEvidence.
	LauncherErrors []string
	// Warnings are "NCCL WARN" lines, capped at maxEvidence.
	Warnings []string
}

const maxEvidence = 8

var (
	reMPIPrefix = regexp.MustCompile(`^\s*\[\d+,\d+\]<(?:stdout|stderr)>:`)
	reTestsVer  = regexp.MustCompile(`nccl-tests version (\S+)(?:.*nccl-library=(\d+))?`)
	reNCCLVer   = regexp.MustCompile(`NCCL version (\S+)`)
	reStart     = regexp.MustCompile(`Collective test (?:starting|concluded): (\S+)`)
	reParams    = regexp.MustCompile(`nThread (\d+) nGpus (\d+) minBytes (\d+) maxBytes (\d+)`)
	reRank      = regexp.MustCompile(`^#?\s*Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(.*?)\s*device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$`)
	reOOB       = regexp.MustCompile(`Out of bounds values\s*:\s*(\d+)\s+(OK|FAILED)`)
	reAvg       = regexp.MustCompile(`Avg bus bandwidth\s*:\s*([0-9.eE+-]+|nan|-?inf)`)
	reLauncher  = regexp.MustCompile(`(?i)could not resolve hostname|name or service not known|temporary failure in name resolution|no route to host|connection refused|connection timed out|network is unreachable|unable to reliably start|ORTE does not know how to route|failed to connect|bootstrap.*(?:error|fail|timeout)`)
)

// Parse reads nccl-tests output (stdout and stderr together, as a pod log
// has them). It returns ErrNoTable when there is no result table and
// ErrTruncated (with the partial Result) when the table has no footer.
func Parse(text string) (*Result, error) {
	r := &Result{}
	var cols *layout
	tableStarted := false
	open := false // a table (header or rows) after the last footer
	hosts := map[string]bool{}
	var lines []string
	for _, raw := range strings.Split(text, "\n") {
		lines = append(lines, strings.TrimRight(reMPIPrefix.ReplaceAllString(strings.TrimRight(raw, "\r"), ""), " \t"))
	}
	r.Net = readNet(lines)
	for _, line := range lines {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			continue
		}
		if m := reTestsVer.FindStringSubmatch(line); m != nil && r.TestsVersion == "" {
			r.TestsVersion = m[1]
			if m[2] != "" && r.NCCLVersion == "" {
				r.NCCLVersion = versionFromCode(m[2])
			}
		}
		if m := reNCCLVer.FindStringSubmatch(line); m != nil && r.NCCLVersion == "" && !strings.Contains(line, "nccl-tests version") {
			r.NCCLVersion = m[1]
		}
		if m := reStart.FindStringSubmatch(line); m != nil && r.Collective == "" {
			r.Collective = m[1]
		}
		if m := reParams.FindStringSubmatch(line); m != nil {
			r.NThread, _ = strconv.ParseInt(m[1], 10, 64)
			r.NGPUs, _ = strconv.ParseInt(m[2], 10, 64)
			r.MinBytes, _ = strconv.ParseInt(m[3], 10, 64)
			r.MaxBytes, _ = strconv.ParseInt(m[4], 10, 64)
			continue
		}
		if m := reRank.FindStringSubmatch(trimmed); m != nil {
			rk := Rank{Host: m[4], BusID: m[6], GPU: strings.TrimSpace(m[7]), Group: -1}
			rk.Rank, _ = strconv.ParseInt(m[1], 10, 64)
			if m[2] != "" {
				rk.Group, _ = strconv.ParseInt(m[2], 10, 64)
			}
			rk.PID, _ = strconv.ParseInt(m[3], 10, 64)
			rk.Device, _ = strconv.ParseInt(m[5], 10, 64)
			r.Ranks = append(r.Ranks, rk)
			if rk.Host != "" && !hosts[rk.Host] {
				hosts[rk.Host] = true
				r.Hosts = append(r.Hosts, rk.Host)
			}
			continue
		}
		if m := reOOB.FindStringSubmatch(line); m != nil {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			r.OutOfBoundsOK = m[2] == "OK" && (!r.FooterSeen || r.OutOfBoundsOK)
			r.OutOfBounds += n
			r.FooterSeen, open, cols = true, false, nil
			r.Runs++
			continue
		}
		if m := reAvg.FindStringSubmatch(line); m != nil {
			if v, err := strconv.ParseFloat(m[1], 64); err == nil {
				r.AvgBusBW, r.AvgBusBWSeen = v, true
			}
			continue
		}
		if strings.Contains(line, "NCCL WARN") {
			if len(r.Warnings) < maxEvidence {
				r.Warnings = append(r.Warnings, trimmed)
			}
		}
		if reLauncher.MatchString(line) && len(r.LauncherErrors) < maxEvidence {
			r.LauncherErrors = append(r.LauncherErrors, trimmed)
		}
		if l, ok := columnHeader(trimmed); ok {
			cols, tableStarted, open = l, true, true
			continue
		}
		if isTableBanner(trimmed) {
			tableStarted, open = true, true
			continue
		}
		if strings.HasPrefix(trimmed, "#") || strings.Contains(line, "NCCL ") {
			continue
		}
		if row, ok := parseRow(trimmed, cols); ok {
			tableStarted, open = true, true
			r.Rows = append(r.Rows, row)
		}
	}
	for _, row := range r.Rows {
		for _, m := range []*Measurement{&row.OutOfPlace, row.InPlace} {
			if m == nil {
				continue
			}
			if m.Wrong > 0 {
				r.WrongTotal += m.Wrong
			}
			// A zero time makes nccl-tests print inf: not a measurement.
			if m.BusBW > r.MaxBusBW && !math.IsInf(m.BusBW, 0) {
				r.MaxBusBW, r.MaxBusBWAtSize = m.BusBW, row.SizeBytes
			}
		}
	}
	switch {
	case !tableStarted:
		return r, ErrNoTable
	case open:
		r.Truncated = true
		return r, fmt.Errorf("%w (%d rows read, last size %s)", ErrTruncated, len(r.Rows), lastSize(r.Rows))
	case len(r.Rows) == 0 && tableStarted:
		r.Truncated = true
		return r, fmt.Errorf("%w: the footer follows a table with no rows", ErrTruncated)
	}
	return r, nil
}

// LargestRow is the row of the largest message size — the last row of an
// all_reduce_perf table, whose sizes grow — and false when there is none.
// When several runs measured that size (a log with two tables), the later
// row wins: it is the one the run ended on.
func (r *Result) LargestRow() (Row, bool) {
	best := -1
	for i, row := range r.Rows {
		if best < 0 || row.SizeBytes >= r.Rows[best].SizeBytes {
			best = i
		}
	}
	if best < 0 {
		return Row{}, false
	}
	return r.Rows[best], true
}

func lastSize(rows []Row) string {
	if len(rows) == 0 {
		return "none"
	}
	return strconv.FormatInt(rows[len(rows)-1].SizeBytes, 10) + " B"
}

// versionFromCode turns NCCL's version code (23102) into "2.31.2".
func versionFromCode(s string) string {
	n, err := strconv.Atoi(s)
	if err != nil || n < 10000 {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d", n/10000, n%10000/100, n%100)
}

// layout says where each column of a row is.
type layout struct {
	redop, root bool // which optional columns the version prints
	oldError    bool // "error" (a float) instead of "#wrong" (a count)
}

func (l layout) prefix() int {
	n := 3 // size count type
	if l.redop {
		n++
	}
	if l.root {
		n++
	}
	return n
}

// columnHeader recognises "#  size  count  type  redop  root  time  algbw …".
func columnHeader(line string) (*layout, bool) {
	f := strings.Fields(strings.TrimPrefix(line, "#"))
	if len(f) < 7 || f[0] != "size" || f[1] != "count" || f[2] != "type" {
		return nil, false
	}
	l := &layout{}
	for _, c := range f[3:] {
		switch c {
		case "redop":
			l.redop = true
		case "root":
			l.root = true
		case "error":
			l.oldError = true
		}
	}
	return l, true
}

// isTableBanner recognises the two other header lines of the table: the
// "out-of-place   in-place" banner and the "(B)  (elements)" units line.
func isTableBanner(line string) bool {
	f := strings.Fields(strings.TrimPrefix(line, "#"))
	if len(f) == 2 && f[0] == "out-of-place" && f[1] == "in-place" {
		return true
	}
	return len(f) >= 2 && f[0] == "(B)" && f[1] == "(elements)"
}

// parseRow reads one data row; without a column header the layout is
// inferred from the number of fields and whether the fourth is a number.
func parseRow(line string, cols *layout) (Row, bool) {
	f := strings.Fields(line)
	if len(f) < 7 {
		return Row{}, false
	}
	size, err1 := strconv.ParseInt(f[0], 10, 64)
	count, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || size < 0 || count < 0 || isNumber(f[2]) {
		return Row{}, false
	}
	l := layout{}
	if cols != nil {
		l = *cols
	} else {
		switch extra := (len(f) - 3) % 4; {
		case extra == 2:
			l.redop, l.root = true, true
		case extra == 1 && isNumber(f[3]):
			l.root = true
		case extra == 1:
			l.redop = true
		}
		l.oldError = !isInt(f[len(f)-1]) && f[len(f)-1] != "N/A"
	}
	p := l.prefix()
	if len(f) != p+4 && len(f) != p+8 {
		return Row{}, false
	}
	row := Row{SizeBytes: size, Count: count, Type: f[2], Root: -1}
	i := 3
	if l.redop {
		row.Redop = f[i]
		i++
	}
	if l.root {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return Row{}, false
		}
		row.Root = v
		i++
	}
	m, ok := parseMeasurement(f[i:i+4], l.oldError)
	if !ok {
		return Row{}, false
	}
	row.OutOfPlace = m
	if len(f) == p+8 {
		in, ok := parseMeasurement(f[i+4:i+8], l.oldError)
		if !ok {
			return Row{}, false
		}
		row.InPlace = &in
	}
	return row, true
}

func parseMeasurement(f []string, oldError bool) (Measurement, bool) {
	var m Measurement
	var err error
	if m.TimeUS, err = strconv.ParseFloat(f[0], 64); err != nil {
		return m, false
	}
	if m.AlgBW, err = strconv.ParseFloat(f[1], 64); err != nil {
		return m, false
	}
	if m.BusBW, err = strconv.ParseFloat(f[2], 64); err != nil {
		return m, false
	}
	w := strings.TrimSuffix(f[3], "*") // some forks star values over the threshold
	switch {
	case w == "N/A":
		m.Wrong = -1
	case oldError:
		v, err := strconv.ParseFloat(w, 64)
		if err != nil {
			return m, false
		}
		m.MaxError, m.Wrong = v, 0
		if v != 0 {
			m.Wrong = 1
		}
	default:
		v, err := strconv.ParseInt(w, 10, 64)
		if err != nil || v < 0 {
			return m, false
		}
		m.Wrong = v
	}
	return m, true
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

func isInt(s string) bool {
	_, err := strconv.ParseInt(strings.TrimSuffix(s, "*"), 10, 64)
	return err == nil
}
