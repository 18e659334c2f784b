// Package telemetry is the provider's measurement of itself, for benchmarks
// (bench/) and for users asking what a plan costs: a log of every API request
// (AIPLATFORM_REQUEST_LOG) and CPU and heap profiles (AIPLATFORM_PROFILE).
// Nothing starts by itself: the provider wires both explicitly
// (provider.New starts profiling, Configure wraps the client's transport).
package telemetry

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RequestLogEnv names the file to which the provider appends one JSON line per
// API request (and a line whenever its peak resident memory grows), for
// benchmarks and for users asking what a plan costs the API server:
//
//	AIPLATFORM_REQUEST_LOG=/tmp/requests.jsonl terraform plan
//
// A provider process has no exit hook it controls (Terraform stops it), so the
// file is appended to as requests happen rather than written at exit: every
// line is a single write(2) on a file opened O_APPEND, which keeps the lines of
// the several provider processes of one Terraform command whole. ReadRequestLog
// aggregates a file.
const RequestLogEnv = "AIPLATFORM_REQUEST_LOG"

// RequestKey is what a request did, in the API server's terms (as its audit
// log names them).
type RequestKey struct {
	// Verb is get, list, watch, create, update, patch, apply (a patch that is a
	// server-side apply), delete or deletecollection; for a path that names no
	// resource (discovery, /version, /openapi) the lower-case HTTP method.
	Verb string `json:"verb"`
	// Resource is the plural resource, with its group unless it is the core
	// group and its subresource: "nodes", "clusterqueues.kueue.x-k8s.io",
	// "nodes/status". For a path that names no resource, the path itself
	// ("/apis", "/apis/kueue.x-k8s.io/v1beta2", "/openapi/v3").
	Resource string `json:"resource"`
}

func (k RequestKey) String() string { return k.Verb + " " + k.Resource }

// ParseRequest says what a request to the API server does, from its method,
// URL and Content-Type, the way the API server's own request info does.
func ParseRequest(method string, u *url.URL, contentType string) RequestKey {
	nonResource := RequestKey{Verb: strings.ToLower(method), Resource: u.Path}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	var group string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:] // api/v1
	case len(parts) >= 4 && parts[0] == "apis":
		group, parts = parts[1], parts[3:] // apis/<group>/<version>
	default:
		return nonResource
	}
	watch := false
	if parts[0] == "watch" { // the deprecated /watch/ prefix
		watch, parts = true, parts[1:]
		if len(parts) == 0 {
			return nonResource
		}
	}
	// namespaces/<ns>/<resource>/... is a namespaced resource; namespaces,
	// namespaces/<ns>, namespaces/<ns>/status and /finalize are Namespaces.
	if parts[0] == "namespaces" && len(parts) > 2 && parts[2] != "status" && parts[2] != "finalize" {
		parts = parts[2:]
	}
	resource, name, sub := parts[0], "", ""
	if len(parts) > 1 {
		name = parts[1]
	}
	if len(parts) > 2 {
		sub = parts[2]
	}

	var verb string
	switch method {
	case http.MethodGet, http.MethodHead:
		verb = "get"
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
		if strings.HasPrefix(contentType, "application/apply-patch") {
			verb = "apply"
		}
	case http.MethodDelete:
		verb = "delete"
	default:
		return nonResource
	}
	if verb == "get" {
		if w, _ := strconv.ParseBool(u.Query().Get("watch")); w || watch {
			verb = "watch"
		} else if name == "" {
			verb = "list"
		}
	}
	if verb == "delete" && name == "" {
		verb = "deletecollection"
	}

	if group != "" {
		resource += "." + group
	}
	if sub != "" {
		resource += "/" + sub
	}
	return RequestKey{Verb: verb, Resource: resource}
}

// RequestCounter counts the requests that pass through the transports it
// wraps, by RequestKey. It is safe for concurrent use.
type RequestCounter struct {
	mu     sync.Mutex
	counts map[RequestKey]int
	// record, when set, is called after each request (outside the lock).
	record func(requestLine)
}

// NewRequestCounter returns an empty counter.
func NewRequestCounter() *RequestCounter {
	return &RequestCounter{counts: map[RequestKey]int{}}
}

// Wrap wraps a transport so that its requests are counted; it has the
// signature of rest.Config.Wrap's argument.
func (c *RequestCounter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return &countingTransport{counter: c, next: rt}
}

// Counts returns a copy of the counts so far.
func (c *RequestCounter) Counts() map[RequestKey]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[RequestKey]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

func (c *RequestCounter) add(k RequestKey) {
	c.mu.Lock()
	c.counts[k]++
	c.mu.Unlock()
}

type countingTransport struct {
	counter *RequestCounter
	next    http.RoundTripper
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	key := ParseRequest(req.Method, req.URL, req.Header.Get("Content-Type"))
	t.counter.add(key)
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	if t.counter.record != nil {
		line := requestLine{
			RequestKey: key,
			Page:       key.Verb == "list" && req.URL.Query().Get("continue") != "",
			Ms:         float64(time.Since(start).Microseconds()) / 1000,
		}
		if resp != nil {
			line.Code = resp.StatusCode
		}
		t.counter.record(line)
	}
	return resp, err
}

// requestLine is one line of the request log: a request (Verb set) or a new
// peak of the process's resident memory.
type requestLine struct {
	RequestKey
	PID int `json:"pid"`
	// T is when the line was written, in Unix seconds.
	T float64 `json:"t"`
	// Page marks a LIST request that continues an earlier one (?continue=).
	Page bool `json:"page,omitempty"`
	Code int  `json:"code,omitempty"`
	// Ms is the time until the response headers arrived.
	Ms float64 `json:"ms,omitempty"`
	// VmHWMKiB is the process's peak resident set size so far (/proc/self/status).
	VmHWMKiB int64 `json:"vmhwm_kib,omitempty"`
}

// processLog is the request log of this process, opened on first use.
var processLog struct {
	once    sync.Once
	counter *RequestCounter
}

// hwmInterval is how often the peak resident memory is sampled. VmHWM only
// grows, so a sample taken later still sees an earlier peak; only growth in the
// last interval before the process ends can be missed.
const hwmInterval = 100 * time.Millisecond

// RequestLogTransport returns a transport wrapper (rest.Config.Wrap's
// argument) that counts requests into the file named by RequestLogEnv, or nil
// when it is not set. All clients of the process share one log, opened on
// first use.
func RequestLogTransport() func(http.RoundTripper) http.RoundTripper {
	path := os.Getenv(RequestLogEnv)
	if path == "" {
		return nil
	}
	processLog.once.Do(func() {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", RequestLogEnv, err)
			return
		}
		l := &fileLog{f: f, pid: os.Getpid()}
		c := NewRequestCounter()
		c.record = l.write
		processLog.counter = c
		go l.sampleHWM()
	})
	if processLog.counter == nil {
		return nil
	}
	return processLog.counter.Wrap
}

type fileLog struct {
	mu      sync.Mutex
	f       *os.File
	pid     int
	lastHWM int64
}

// write appends one line in a single write, with the current peak memory.
func (l *fileLog) write(line requestLine) {
	line.PID = l.pid
	line.T = float64(time.Now().UnixMicro()) / 1e6
	line.VmHWMKiB = vmHWM()
	b, err := json.Marshal(line)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if line.VmHWMKiB > l.lastHWM {
		l.lastHWM = line.VmHWMKiB
	}
	_, _ = l.f.Write(append(b, '\n'))
}

// sampleHWM appends a line whenever the peak memory has grown since the last
// line, for the rest of the process's life.
func (l *fileLog) sampleHWM() {
	for range time.Tick(hwmInterval) {
		hwm := vmHWM()
		l.mu.Lock()
		grown := hwm > l.lastHWM
		l.mu.Unlock()
		if grown {
			l.write(requestLine{})
		}
	}
}

// vmHWM is the process's peak resident set size in KiB, 0 where /proc is not.
func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return parseVmHWM(b)
}

func parseVmHWM(status []byte) int64 {
	for _, line := range bytes.Split(status, []byte{'\n'}) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			v, _ := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte("kB")))), 10, 64)
			return v
		}
	}
	return 0
}

// RequestLog is the aggregate of a request log file (see RequestLogEnv).
type RequestLog struct {
	// Requests counts every request by verb and resource.
	Requests map[RequestKey]int
	// Pages counts the LIST requests among Requests that continued an earlier
	// one: Requests − Pages is the number of listings.
	Pages map[RequestKey]int
	// Errors counts responses with a status of 400 or more, and requests
	// without a response.
	Errors int
	// Processes is the number of provider processes that wrote to the log.
	Processes int
	// PeakVmHWMKiB is the highest peak resident set size of any of them.
	PeakVmHWMKiB int64
	// Ms are the times until the response headers arrived, in log order.
	Ms []float64
}

// Latency returns the sum, the median and the 90th percentile of Ms.
func (r RequestLog) Latency() (sum, median, p90 float64) {
	if len(r.Ms) == 0 {
		return 0, 0, 0
	}
	sorted := append([]float64(nil), r.Ms...)
	sort.Float64s(sorted)
	for _, v := range sorted {
		sum += v
	}
	return sum, sorted[len(sorted)/2], sorted[len(sorted)*9/10]
}

// Total is the number of requests.
func (r RequestLog) Total() int {
	n := 0
	for _, v := range r.Requests {
		n += v
	}
	return n
}

// Listings is the number of LISTs of a resource, not counting continued pages.
func (r RequestLog) Listings(resource string) int {
	k := RequestKey{Verb: "list", Resource: resource}
	return r.Requests[k] - r.Pages[k]
}

// Keys returns the request keys, most frequent first.
func (r RequestLog) Keys() []RequestKey {
	keys := make([]RequestKey, 0, len(r.Requests))
	for k := range r.Requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if r.Requests[keys[i]] != r.Requests[keys[j]] {
			return r.Requests[keys[i]] > r.Requests[keys[j]]
		}
		return keys[i].String() < keys[j].String()
	})
	return keys
}

// ReadRequestLog aggregates a request log file. A missing file is an empty log.
func ReadRequestLog(path string) (RequestLog, error) {
	out := RequestLog{Requests: map[RequestKey]int{}, Pages: map[RequestKey]int{}}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	defer f.Close()
	pids := map[int]bool{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		var l requestLine
		if err := json.Unmarshal(s.Bytes(), &l); err != nil {
			return out, fmt.Errorf("%s: %w", path, err)
		}
		pids[l.PID] = true
		if l.VmHWMKiB > out.PeakVmHWMKiB {
			out.PeakVmHWMKiB = l.VmHWMKiB
		}
		if l.Verb == "" {
			continue // a memory sample
		}
		out.Requests[l.RequestKey]++
		out.Ms = append(out.Ms, l.Ms)
		if l.Page {
			out.Pages[l.RequestKey]++
		}
		if l.Code == 0 || l.Code >= 400 {
			out.Errors++
		}
	}
	out.Processes = len(pids)
	return out, s.Err()
}
