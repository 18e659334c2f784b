package kube

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// PodLogAll asks the pods/log subresource for the container's log with a
// byte limit, and says when the log was longer.
func TestPodLogAll(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		if r.URL.Path != "/api/v1/namespaces/fabric/pods/h100-launcher-x/log" {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
			return
		}
		body := "# Out of bounds values : 0 OK\n"
		if n, err := strconv.Atoi(r.URL.Query().Get("limitBytes")); err == nil && n < len(body) {
			body = body[:n] // as the kubelet does
		}
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	c := NewClientFromREST(&rest.Config{Host: srv.URL}, false)

	got, err := c.PodLogAll(context.Background(), "fabric", "h100-launcher-x", "launcher", 0)
	if err != nil || got.Text != "# Out of bounds values : 0 OK\n" || got.Truncated {
		t.Fatalf("log %+v, err %v", got, err)
	}
	got, err = c.PodLogAll(context.Background(), "fabric", "h100-launcher-x", "launcher", 5)
	if err != nil || got.Text != "# Out" || !got.Truncated {
		t.Errorf("limited log %+v, err %v", got, err)
	}
	_, err = c.PodLogAll(context.Background(), "fabric", "gone", "launcher", 0)
	if !errors.Is(err, ErrLogsUnavailable) || !strings.Contains(err.Error(), "/api/v1/namespaces/fabric/pods/gone/log?container=launcher") {
		t.Errorf("missing pod: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) < 1 || !strings.Contains(asked[0], "container=launcher") || !strings.Contains(asked[0], "limitBytes=33554433") {
		t.Errorf("requests %v", asked)
	}
}
