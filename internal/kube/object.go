package kube

import (
	"context"
	"fmt"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube/ref"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// Kind describes an API resource the provider manages. It is static: typed
// resources never need discovery to plan or read.
type Kind struct {
	Group    string
	Version  string
	Resource string // plural, lower case
	Kind     string
	// Namespaced objects are addressed by namespace/name, others by name.
	Namespaced bool
	// Missing is the message given when the server does not serve this resource
	// at all (its CRD is not installed).
	Missing string
	// Alternates are older versions to fall back to, in order, when the server
	// does not serve Version (Kueue ≤ 0.12 serves only v1beta1).
	Alternates []string
	// Convert rewrites an object's fields between Version and an alternate:
	// down before writing at the alternate, up after reading from it. Objects
	// of Version are converted in place; nil means the fields are the same.
	Convert func(obj map[string]any, alternate string, down bool)
}

// at returns the kind at another version.
func (k Kind) at(version string) Kind {
	k.Version = version
	return k
}

// GVR is the resource's group/version/resource.
func (k Kind) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: k.Group, Version: k.Version, Resource: k.Resource}
}

// APIVersion is group/version as written in an object.
func (k Kind) APIVersion() string {
	return schema.GroupVersion{Group: k.Group, Version: k.Version}.String()
}

// Ref names one object (package ref, which has no dependencies).
type Ref = ref.Ref

func (c *Client) resource(k Kind, ref Ref) (dynamic.ResourceInterface, error) {
	dyn, err := c.Dynamic()
	if err != nil {
		return nil, err
	}
	ri := dyn.Resource(k.GVR())
	if k.Namespaced {
		return ri.Namespace(ref.Namespace), nil
	}
	return ri, nil
}

// NewObject returns an object of kind k named by ref, with the given top-level
// fields (spec, or kind-specific fields such as a priority class's value). A
// "metadata" field may carry labels and annotations; name and namespace come
// from ref.
func NewObject(k Kind, ref Ref, fields map[string]any) *unstructured.Unstructured {
	obj := map[string]any{}
	for key, v := range fields {
		obj[key] = v
	}
	obj["apiVersion"] = k.APIVersion()
	obj["kind"] = k.Kind
	meta := map[string]any{}
	if m, ok := fields["metadata"].(map[string]any); ok {
		for key, v := range m {
			meta[key] = v
		}
	}
	meta["name"] = ref.Name
	if k.Namespaced {
		meta["namespace"] = ref.Namespace
	}
	obj["metadata"] = meta
	return &unstructured.Unstructured{Object: obj}
}

// version returns the kind at the version this server serves, as far as this
// provider run has learnt: its own version until a request says otherwise.
func (c *Client) version(k Kind) Kind {
	if v, ok := c.versions.Load(k.Group + "/" + k.Resource); ok {
		return k.at(v.(string))
	}
	return k
}

// fallback is called when the server does not serve kv.Version: it looks up
// the group's served versions once (one request, only on this path) and
// remembers the first alternate served.
func (c *Client) fallback(ctx context.Context, k, kv Kind) (Kind, bool) {
	if kv.Version != k.Version || len(k.Alternates) == 0 {
		return kv, false
	}
	typed, err := c.Typed()
	if err != nil {
		return kv, false
	}
	groups, err := typed.Discovery().ServerGroups()
	if err != nil {
		return kv, false
	}
	served := map[string]bool{}
	for _, g := range groups.Groups {
		if g.Name == k.Group {
			for _, v := range g.Versions {
				served[v.Version] = true
			}
		}
	}
	for _, alt := range k.Alternates {
		if served[alt] {
			c.versions.Store(k.Group+"/"+k.Resource, alt)
			return k.at(alt), true
		}
	}
	return kv, false
}

// convert rewrites obj between k's version and kv's.
func convert(k, kv Kind, obj *unstructured.Unstructured, down bool) {
	if obj == nil || kv.Version == k.Version {
		return
	}
	if k.Convert != nil {
		k.Convert(obj.Object, kv.Version, down)
	}
	if down {
		obj.SetAPIVersion(kv.APIVersion())
	} else {
		obj.SetAPIVersion(k.APIVersion())
	}
}

// ServedVersion is the version of k this client has used (after any fallback).
func (c *Client) ServedVersion(k Kind) string { return c.version(k).Version }

// Apply server-side applies obj (written at k's version) with the provider's
// field manager and returns the live object at k's version. Fields this
// manager set before and obj no longer has are removed.
func (c *Client) Apply(ctx context.Context, k Kind, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return c.ApplyForce(ctx, k, obj, c.forceConflicts)
}

// ForceConflicts reports the provider's force_conflicts setting.
func (c *Client) ForceConflicts() bool { return c.forceConflicts }

// ApplyForce is Apply taking fields from other managers when force is set,
// whatever the provider's force_conflicts says: for objects whose other
// writer only ever updates (never applies) fields the provider copies from
// the live object first, such as KubeRay's autoscaler and worker replicas.
func (c *Client) ApplyForce(ctx context.Context, k Kind, obj *unstructured.Unstructured, force bool) (*unstructured.Unstructured, error) {
	live, _, err := c.serverApply(ctx, k, obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: force})
	if err != nil {
		return nil, c.applyError(ctx, err, k, Ref{Namespace: obj.GetNamespace(), Name: obj.GetName()}, obj)
	}
	return live, nil
}

// serverApply sends obj by server-side apply with opts at the version the
// server serves (falling back to an older one), converting to and from k's
// version; the error is the server's, unexplained, with the version it was
// sent at.
func (c *Client) serverApply(ctx context.Context, k Kind, obj *unstructured.Unstructured, opts metav1.ApplyOptions) (*unstructured.Unstructured, Kind, error) {
	ref := Ref{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	kv := c.version(k)
	for {
		ri, err := c.resource(kv, ref)
		if err != nil {
			return nil, kv, err
		}
		send := obj
		if kv.Version != k.Version {
			send = obj.DeepCopy()
			convert(k, kv, send, true)
		}
		out, err := ri.Apply(ctx, ref.Name, send, opts)
		if isResourceNotServed(err) {
			if next, ok := c.fallback(ctx, k, kv); ok {
				kv = next
				continue
			}
		}
		if err != nil {
			return nil, kv, err
		}
		convert(k, kv, out, false)
		return out, kv, nil
	}
}

// Get returns the live object at k's version, or found=false when it does not exist.
func (c *Client) Get(ctx context.Context, k Kind, ref Ref) (obj *unstructured.Unstructured, found bool, err error) {
	kv := c.version(k)
	for {
		ri, err := c.resource(kv, ref)
		if err != nil {
			return nil, false, err
		}
		obj, err = ri.Get(ctx, ref.Name, metav1.GetOptions{})
		if isResourceNotServed(err) {
			if next, ok := c.fallback(ctx, k, kv); ok {
				kv = next
				continue
			}
		}
		if isObjectNotFound(err) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, c.explain(ctx, err, "read", kv, ref)
		}
		convert(k, kv, obj, false)
		return obj, true, nil
	}
}

// Delete deletes the object (background propagation) and waits until it is gone
// or ctx ends. A missing object is not an error.
func (c *Client) Delete(ctx context.Context, k Kind, ref Ref) error {
	return c.deleteAndWait(ctx, k, ref, metav1.DeletePropagationBackground)
}

// deleteAndWait deletes with the given propagation and waits until the object
// is gone or ctx ends. A missing object is not an error.
func (c *Client) deleteAndWait(ctx context.Context, k Kind, ref Ref, policy metav1.DeletionPropagation) error {
	kv := c.version(k)
	ri, err := c.resource(kv, ref)
	if err != nil {
		return err
	}
	err = ri.Delete(ctx, ref.Name, metav1.DeleteOptions{PropagationPolicy: &policy})
	if isResourceNotServed(err) {
		if next, ok := c.fallback(ctx, k, kv); ok {
			return c.deleteAndWait(ctx, next, ref, policy)
		}
	}
	if isObjectNotFound(err) {
		return nil
	}
	if err != nil {
		return c.explain(ctx, err, "delete", kv, ref)
	}
	err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
		if isObjectNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("waiting for %s %s to be deleted: %w", k.Kind, ref, c.explain(ctx, err, "delete", kv, ref))
	}
	return nil
}

// ParseImportID parses "name" (cluster-scoped) or "namespace/name" (namespaced).
func ParseImportID(id string, namespaced bool) (Ref, error) { return ref.Parse(id, namespaced) }

// isObjectNotFound tells a missing object apart from a missing resource type: the
// server answers both with 404, but only the first comes with a Status naming
// the object; an unserved group/version returns a plain 404 page.
func isObjectNotFound(err error) bool {
	if !apierrors.IsNotFound(err) {
		return false
	}
	return !isResourceNotServed(err)
}

func isResourceNotServed(err error) bool {
	if !apierrors.IsNotFound(err) {
		return false
	}
	var status apierrors.APIStatus
	if !asAPIStatus(err, &status) {
		return false
	}
	d := status.Status().Details
	if d == nil {
		return true
	}
	for _, c := range d.Causes {
		if c.Type == metav1.CauseTypeUnexpectedServerResponse {
			return true
		}
	}
	return false
}
