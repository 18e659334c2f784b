package kube

import (
	"context"
	"net/http"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// The per-run read cache (issue #30). A refresh reads every object the
// state holds, one GET each: 20 ClusterQueues were 20 round trips, and an
// install's drift check one per chart object. Instead, the first read of a
// kind in a provider run lists it, in pages, and later reads of that kind are
// answered from the listing. Terraform starts the provider for each command,
// so the listing is as fresh as the command.
//
// A namespaced kind is listed across every namespace first: five releases in
// five namespaces read their Roles, Services and ServiceAccounts with one
// listing each, not five. When that listing is refused (a role granted in
// some namespaces only) or too large, the object's namespace is listed.
//
// Reads after a write must see it: every request through this client that
// can change the cluster (any verb but GET, LIST and WATCH, and not a dry
// run) — the provider's own applies and deletes and Helm's — empties the
// cache (invalidate, wired into the client's transport).
//
// Not listed, read one by one:
//   - a kind with more than listLimit objects (in the namespace): listing
//     thousands of Workloads or Pods to read the few a plan manages costs
//     more than the GETs; the first page says how many there are
//     (remainingItemCount), so such a kind costs one page, once;
//   - CustomResourceDefinitions when the cluster has more than
//     bulkyLimits' 100: each is large (Kueue's 11 are 830 KB; an operator
//     like Crossplane's brings hundreds), so a first page of one object
//     counts them before anything large is read; a platform's 20 cost two
//     requests instead of 20;
//   - Secrets: a listing would read every secret in the namespace, not only
//     the chart's.

// listLimit bounds the objects of one listing (four pages of 500).
const listLimit = 2000

var notListed = map[schema.GroupResource]bool{
	{Group: "", Resource: "secrets"}: true,
}

// bulkyLimits are kinds whose objects are large: a first page of one
// counts them, and the kind is listed only when there are at most this many.
var bulkyLimits = map[schema.GroupResource]int{
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: 100,
}

type kindKey struct {
	gvr       schema.GroupVersionResource
	namespace string
}

type listing struct {
	done  chan struct{}
	items map[string]*unstructured.Unstructured // by namespace/name; nil: not listable, read one by one
}

type readCache struct {
	mu    sync.Mutex
	lists map[kindKey]*listing
}

// invalidate forgets every listing.
func (rc *readCache) invalidate() {
	rc.mu.Lock()
	rc.lists = nil
	rc.mu.Unlock()
}

// lookup returns the listed object (nil, found=false when the kind was
// listed and it is not there); listed=false when the kind is not listable
// and the caller must read the object itself.
func (rc *readCache) lookup(ctx context.Context, ri dynamic.NamespaceableResourceInterface, key kindKey, name string) (obj *unstructured.Unstructured, found, listed bool, err error) {
	items, err := rc.listing(ctx, ri, kindKey{gvr: key.gvr}) // every namespace, or a cluster-scoped kind
	if err == nil && items == nil && key.namespace != "" {
		items, err = rc.listing(ctx, ri, key) // refused or too large across the cluster: the namespace
	}
	if err != nil || items == nil {
		return nil, false, false, err
	}
	obj, found = items[key.namespace+"/"+name]
	return obj, found, true, nil
}

// listing is the kind's listing in key.namespace ("" for a namespaced
// kind: every namespace), by namespace/name; nil when it is not listable.
func (rc *readCache) listing(ctx context.Context, ri dynamic.NamespaceableResourceInterface, key kindKey) (map[string]*unstructured.Unstructured, error) {
	if notListed[key.gvr.GroupResource()] {
		return nil, nil
	}
	rc.mu.Lock()
	if rc.lists == nil {
		rc.lists = map[kindKey]*listing{}
	}
	l, ok := rc.lists[key]
	if !ok {
		l = &listing{done: make(chan struct{})}
		rc.lists[key] = l
	}
	rc.mu.Unlock()
	if ok {
		select {
		case <-l.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return l.items, nil
	}
	items, err := list(ctx, ri, key.namespace, bulkyLimits[key.gvr.GroupResource()])
	l.items = items
	close(l.done)
	if err != nil && !refused(err) {
		rc.mu.Lock()
		if rc.lists[key] == l {
			delete(rc.lists, key) // not cached: the next reader tries again
		}
		rc.mu.Unlock()
		return nil, err
	}
	// Refused (a role with get but not list): read one by one for the
	// rest of the run, without asking again.
	return items, nil
}

func refused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err)
}

// list reads the kind in pages of pageSize; nil when it holds more than
// listLimit objects, or more than bulky when bulky > 0 (counted by a first
// page of one object).
func list(ctx context.Context, ri dynamic.NamespaceableResourceInterface, namespace string, bulky int) (map[string]*unstructured.Unstructured, error) {
	var r dynamic.ResourceInterface = ri
	if namespace != "" {
		r = ri.Namespace(namespace)
	}
	limit := listLimit
	opts := metav1.ListOptions{Limit: pageSize}
	if bulky > 0 {
		limit, opts.Limit = bulky, 1
	}
	items := map[string]*unstructured.Unstructured{}
	for {
		page, err := r.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		if rem := page.GetRemainingItemCount(); rem != nil && int(*rem)+len(items)+len(page.Items) > limit {
			return nil, nil
		}
		for i := range page.Items {
			items[page.Items[i].GetNamespace()+"/"+page.Items[i].GetName()] = &page.Items[i]
		}
		if page.GetContinue() == "" {
			return items, nil
		}
		if len(items) >= limit {
			return nil, nil
		}
		opts.Limit, opts.Continue = pageSize, page.GetContinue()
	}
}

// invalidating is the transport wrapper that empties the cache before and
// after every request that may write (after too: a listing that raced the
// write may hold the object as it was).
func (rc *readCache) invalidating(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		writes := false
		switch req.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			writes = !strings.Contains(req.URL.RawQuery, "dryRun=")
		}
		if writes {
			rc.invalidate()
		}
		resp, err := rt.RoundTrip(req)
		if writes {
			rc.invalidate()
		}
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Read is Get for a refresh or a plan: the object as this run's listing
// of its kind holds it (see the read cache above). Callers must not modify
// the object. Waits and reads after a write use Get.
func (c *Client) Read(ctx context.Context, k Kind, ref Ref) (*unstructured.Unstructured, bool, error) {
	kv := c.version(k)
	dyn, err := c.Dynamic()
	if err != nil {
		return nil, false, err
	}
	ns := ""
	if kv.Namespaced {
		ns = ref.Namespace
	}
	obj, found, listed, err := c.reads.lookup(ctx, dyn.Resource(kv.GVR()), kindKey{kv.GVR(), ns}, ref.Name)
	if err != nil || !listed || kv.Version != k.Version {
		// Not listable, the listing failed (a role without list, a version
		// not served: Get explains and falls back), or served at another
		// version than the caller's: read it alone.
		return c.Get(ctx, k, ref)
	}
	if !found {
		return nil, false, nil
	}
	return obj.DeepCopy(), true, nil // the caller may change its copy
}

// readLive is the live object of a desired one (Drift), through the read
// cache; ri reads it alone when its kind is not listed.
func (c *Client) readLive(ctx context.Context, obj *unstructured.Unstructured, ri dynamic.ResourceInterface) (*unstructured.Unstructured, bool, error) {
	if m, err := c.Mapping(obj.GroupVersionKind()); err == nil {
		if dyn, err := c.Dynamic(); err == nil {
			live, found, listed, err := c.reads.lookup(ctx, dyn.Resource(m.Resource), kindKey{m.Resource, obj.GetNamespace()}, obj.GetName())
			if err == nil && listed {
				return live, found, nil
			}
		}
	}
	live, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if isObjectNotFound(err) {
		return nil, false, nil
	}
	return live, err == nil, err
}
