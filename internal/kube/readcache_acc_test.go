package kube_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// requestCounter counts the requests of a client by method and the path's
// last part: "GET configmaps" is a listing, "GET readcache-0" a read of one.
type requestCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (rc *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTrip(func(req *http.Request) (*http.Response, error) {
		parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
		what := req.Method + " " + parts[len(parts)-1]
		rc.mu.Lock()
		rc.n[what]++
		rc.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

func (rc *requestCounter) take() map[string]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := rc.n
	rc.n = map[string]int{}
	return out
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

var configMapKind = kube.Kind{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}

// A refresh reads a kind with one listing per run: five ConfigMaps are one
// LIST and no GET; a write through the client (the provider's apply, or
// Helm's) empties the cache, so the next read sees it; a name the listing
// lacks is not found without another request; CRDs are read one by one.
func TestAccReadCacheOneListPerKind(t *testing.T) {
	_, env := accClient(t)
	ctx := context.Background()
	counter := &requestCounter{n: map[string]int{}}
	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.Wrap(counter.wrap)
	c := kube.NewClientFromREST(cfg, false)
	for i := range 5 {
		obj := kube.NewObject(configMapKind, kube.Ref{Namespace: "default", Name: fmt.Sprintf("readcache-%d", i)}, map[string]any{"data": map[string]any{"v": "1"}})
		if _, err := c.Apply(ctx, configMapKind, obj); err != nil {
			t.Fatal(err)
		}
	}
	counter.take()
	for i := range 5 {
		obj, found, err := c.Read(ctx, configMapKind, kube.Ref{Namespace: "default", Name: fmt.Sprintf("readcache-%d", i)})
		if err != nil || !found || obj.Object["data"].(map[string]any)["v"] != "1" {
			t.Fatalf("read readcache-%d: %v %v %v", i, obj, found, err)
		}
	}
	if got := counter.take(); len(got) != 1 || got["GET configmaps"] != 1 {
		t.Errorf("five reads of one kind made %v, want one listing (GET configmaps)", got)
	}
	if _, found, err := c.Read(ctx, configMapKind, kube.Ref{Namespace: "default", Name: "readcache-none"}); found || err != nil {
		t.Errorf("a name the listing lacks: found=%v err=%v", found, err)
	}
	if got := counter.take(); len(got) != 0 {
		t.Errorf("reading a name the listing lacks made %v, want no request", got)
	}

	obj := kube.NewObject(configMapKind, kube.Ref{Namespace: "default", Name: "readcache-0"}, map[string]any{"data": map[string]any{"v": "2"}})
	if _, err := c.Apply(ctx, configMapKind, obj); err != nil {
		t.Fatal(err)
	}
	got, _, err := c.Read(ctx, configMapKind, kube.Ref{Namespace: "default", Name: "readcache-0"})
	if err != nil || got.Object["data"].(map[string]any)["v"] != "2" {
		t.Errorf("read after the client's own write: %v %v, want v=2", got, err)
	}

	// CRDs are counted by a first page of one, then listed when there are
	// at most 100: two requests for every CRD a plan reads.
	crd := kube.Kind{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions", Kind: "CustomResourceDefinition"}
	counter.take()
	for _, name := range []string{"widgets.insync.example", "none.insync.example"} {
		if _, _, err := c.Read(ctx, crd, kube.Ref{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	if got := counter.take(); len(got) != 1 || got["GET customresourcedefinitions"] < 1 || got["GET customresourcedefinitions"] > 2 {
		t.Errorf("two CRD reads made %v, want a count and a listing (GET customresourcedefinitions twice at most) and no GET of one", got)
	}

	// A namespaced kind is listed across every namespace once: reads in
	// two namespaces are one listing.
	if _, err := c.Apply(ctx, configMapKind, kube.NewObject(configMapKind, kube.Ref{Namespace: "kube-system", Name: "readcache-other"}, map[string]any{"data": map[string]any{"v": "3"}})); err != nil {
		t.Fatal(err)
	}
	counter.take()
	for _, ref := range []kube.Ref{{Namespace: "default", Name: "readcache-1"}, {Namespace: "kube-system", Name: "readcache-other"}} {
		if _, found, err := c.Read(ctx, configMapKind, ref); err != nil || !found {
			t.Errorf("read %v: found=%v err=%v", ref, found, err)
		}
	}
	if got := counter.take(); len(got) != 1 || got["GET configmaps"] != 1 {
		t.Errorf("reads in two namespaces made %v, want one listing across namespaces", got)
	}

	// Every install's conflict rules look for other controllers'
	// Deployments by name or label in every namespace: one listing.
	dep := deployment("readcache-dep", 0, map[string]any{"containers": []any{container("c", "busybox")}})
	dep.SetLabels(map[string]string{"app": "readcache-dep"})
	if _, err := c.Apply(ctx, deploymentKind, dep); err != nil {
		t.Fatal(err)
	}
	counter.take()
	for _, q := range [][2]string{{"readcache-dep", ""}, {"none", "app=readcache-dep"}} {
		got, err := c.DeploymentsNamed(ctx, q[0], q[1])
		if err != nil || len(got) != 1 || got[0].Name != "readcache-dep" || got[0].Namespace != "default" {
			t.Errorf("DeploymentsNamed(%q, %q) = %v, %v; want default/readcache-dep", q[0], q[1], got, err)
		}
	}
	for _, q := range [][2]string{{"volcano-scheduler", "app=volcano-scheduler"}, {"mpi-operator", ""}, {"jobset-controller-manager", "control-plane=controller-manager"}} {
		if _, err := c.DeploymentsNamed(ctx, q[0], q[1]); err != nil {
			t.Fatal(err)
		}
	}
	if got := counter.take(); len(got) != 1 || got["GET deployments"] != 1 {
		t.Errorf("five lookups of Deployments by name or label made %v, want one listing", got)
	}
}
