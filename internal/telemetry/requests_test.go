package telemetry

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		method, path, contentType string
		want                      string
	}{
		{"GET", "/api/v1/nodes?limit=500", "", "list nodes"},
		{"GET", "/api/v1/nodes?limit=500&continue=abc", "", "list nodes"},
		{"GET", "/api/v1/nodes/gpu-1", "", "get nodes"},
		{"PATCH", "/api/v1/nodes/gpu-1/status", "application/strategic-merge-patch+json", "patch nodes/status"},
		{"PUT", "/api/v1/nodes/gpu-1", "application/json", "update nodes"},
		{"GET", "/api/v1/pods?fieldSelector=status.phase%21%3DSucceeded", "", "list pods"},
		{"GET", "/api/v1/namespaces/default/pods", "", "list pods"},
		{"GET", "/api/v1/namespaces/default/pods?watch=true", "", "watch pods"},
		{"GET", "/api/v1/watch/namespaces/default/pods", "", "watch pods"},
		{"GET", "/api/v1/namespaces", "", "list namespaces"},
		{"GET", "/api/v1/namespaces/default", "", "get namespaces"},
		{"PUT", "/api/v1/namespaces/default/finalize", "", "update namespaces/finalize"},
		{"GET", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/x", "", "get clusterqueues.kueue.x-k8s.io"},
		{"PATCH", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/x", "application/apply-patch+yaml", "apply clusterqueues.kueue.x-k8s.io"},
		{"PATCH", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/x?fieldManager=m", "application/merge-patch+json", "patch clusterqueues.kueue.x-k8s.io"},
		{"GET", "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/localqueues/lq", "", "get localqueues.kueue.x-k8s.io"},
		{"DELETE", "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/localqueues/lq", "", "delete localqueues.kueue.x-k8s.io"},
		{"DELETE", "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/localqueues", "", "deletecollection localqueues.kueue.x-k8s.io"},
		{"POST", "/apis/kueue.x-k8s.io/v1beta2/resourceflavors", "application/json", "create resourceflavors.kueue.x-k8s.io"},
		{"GET", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/x/status", "", "get clusterqueues.kueue.x-k8s.io/status"},
		// Paths that name no resource: discovery, version, OpenAPI.
		{"GET", "/api", "", "get /api"},
		{"GET", "/api/v1", "", "get /api/v1"},
		{"GET", "/apis", "", "get /apis"},
		{"GET", "/apis/kueue.x-k8s.io/v1beta2", "", "get /apis/kueue.x-k8s.io/v1beta2"},
		{"GET", "/version", "", "get /version"},
		{"GET", "/openapi/v3/apis/kueue.x-k8s.io/v1beta2", "", "get /openapi/v3/apis/kueue.x-k8s.io/v1beta2"},
		{"GET", "/apis/kueue.x-k8s.io/v1beta2/watch", "", "get /apis/kueue.x-k8s.io/v1beta2/watch"},
	} {
		u, err := url.Parse("https://127.0.0.1:6443" + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := ParseRequest(tc.method, u, tc.contentType).String(); got != tc.want {
			t.Errorf("%s %s: got %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
}

// Requests from many goroutines through one counter are all counted.
func TestRequestCounterConcurrent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "{}")
	}))
	defer srv.Close()
	counter := NewRequestCounter()
	client := &http.Client{Transport: counter.Wrap(http.DefaultTransport)}

	const workers, each = 16, 50
	paths := []string{"/api/v1/nodes", "/api/v1/nodes/n1", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/q"}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				resp, err := client.Get(srv.URL + paths[(w+i)%len(paths)])
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()

	got := counter.Counts()
	total := 0
	for _, n := range got {
		total += n
	}
	if total != workers*each {
		t.Fatalf("counted %d requests, want %d: %v", total, workers*each, got)
	}
	for _, k := range []string{"list nodes", "get nodes", "get clusterqueues.kueue.x-k8s.io"} {
		verb, res, _ := strings.Cut(k, " ")
		if got[RequestKey{Verb: verb, Resource: res}] == 0 {
			t.Errorf("no %q counted: %v", k, got)
		}
	}
}

// The file log written by concurrent requests (and by two processes, here
// two writers) aggregates to the same counts, pages apart.
func TestRequestLogFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/missing") {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, "{}")
	}))
	defer srv.Close()

	var wg sync.WaitGroup
	for pid := 1; pid <= 2; pid++ {
		l := &fileLog{f: f, pid: pid}
		c := NewRequestCounter()
		c.record = l.write
		client := &http.Client{Transport: c.Wrap(http.DefaultTransport)}
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for _, p := range []string{"/api/v1/nodes?limit=500", "/api/v1/nodes?limit=500&continue=x", "/apis/kueue.x-k8s.io/v1beta2/resourceflavors/missing"} {
					resp, err := client.Get(srv.URL + p)
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
				}
			}()
		}
	}
	wg.Wait()

	log, err := ReadRequestLog(path)
	if err != nil {
		t.Fatal(err)
	}
	nodes := RequestKey{Verb: "list", Resource: "nodes"}
	if log.Requests[nodes] != 40 || log.Pages[nodes] != 20 || log.Listings("nodes") != 20 {
		t.Errorf("list nodes: %d requests, %d pages, %d listings; want 40, 20, 20", log.Requests[nodes], log.Pages[nodes], log.Listings("nodes"))
	}
	if n := log.Requests[RequestKey{Verb: "get", Resource: "resourceflavors.kueue.x-k8s.io"}]; n != 20 {
		t.Errorf("get resourceflavors: %d, want 20", n)
	}
	if log.Total() != 60 || log.Errors != 20 || log.Processes != 2 {
		t.Errorf("total %d, errors %d, processes %d; want 60, 20, 2", log.Total(), log.Errors, log.Processes)
	}
	if sum, median, p90 := log.Latency(); len(log.Ms) != 60 || sum <= 0 || median <= 0 || p90 < median {
		t.Errorf("latency of %d requests: sum %v, median %v, p90 %v", len(log.Ms), sum, median, p90)
	}
	if log.PeakVmHWMKiB <= 0 {
		t.Errorf("no peak memory recorded")
	}
	if keys := log.Keys(); len(keys) != 2 || keys[0] != nodes {
		t.Errorf("keys %v: want list nodes first", keys)
	}

	// Every line is whole JSON.
	data, _ := os.ReadFile(path)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if !json.Valid([]byte(line)) {
			t.Fatalf("torn line %q", line)
		}
	}
}

func TestParseVmHWM(t *testing.T) {
	status := "Name:\tterraform-provi\nVmPeak:\t 2000000 kB\nVmHWM:\t   123456 kB\nVmRSS:\t  100000 kB\n"
	if got := parseVmHWM([]byte(status)); got != 123456 {
		t.Errorf("got %d, want 123456", got)
	}
	if got := parseVmHWM([]byte("Name:\tx\n")); got != 0 {
		t.Errorf("got %d without VmHWM, want 0", got)
	}
}

// With AIPLATFORM_REQUEST_LOG set, a client built with RequestLogTransport
// (as the provider's Configure builds it) logs its requests to the file;
// without it there is nothing to wrap.
func TestRequestLogTransportFromEnv(t *testing.T) {
	t.Setenv(RequestLogEnv, "")
	if RequestLogTransport() != nil {
		t.Fatal("a wrapper without " + RequestLogEnv)
	}
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	t.Setenv(RequestLogEnv, path)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"major":"1","minor":"36","gitVersion":"v1.36.3"}`)
	}))
	defer srv.Close()
	c, err := kube.NewClient(kube.Config{Host: srv.URL, WrapTransport: RequestLogTransport()})
	if err != nil {
		t.Fatal(err)
	}
	typed, err := c.Typed()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := typed.Discovery().ServerVersion(); err != nil {
		t.Fatal(err)
	}
	log, err := ReadRequestLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := log.Requests[RequestKey{Verb: "get", Resource: "/version"}]; n != 1 || log.Processes != 1 {
		t.Errorf("logged %v from %d processes, want one get /version", log.Requests, log.Processes)
	}
}
