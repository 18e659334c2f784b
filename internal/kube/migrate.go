package kube

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
)

// Storage-version migration of CRDs: every object is rewritten at the CRD's
// storage version, then status.storedVersions is trimmed to that version, so
// that a later CRD may stop serving the old ones. The API server writes an
// unchanged object only when its stored bytes differ, that is when it was
// stored at another version: a second run rewrites nothing and is cheap, so
// a run cut short is resumed by running it again.

// migratePage is the page size of the listing a migration rewrites.
var migratePage int64 = 500

// StorageState is what a migration reads of one CRD.
type StorageState struct {
	CRD     string   // e.g. clusterqueues.kueue.x-k8s.io
	Kind    string   // e.g. ClusterQueue
	Storage string   // the version objects are written at
	Stored  []string // status.storedVersions
	// Objects is the number of objects of the CRD (every namespace); -1
	// when not counted (the CRD has nothing to migrate).
	Objects int
}

// Pending reports whether objects may be stored at a version other than
// the storage version.
func (s StorageState) Pending() bool {
	return len(s.Stored) != 1 || s.Stored[0] != s.Storage
}

// StorageStates reads the CRDs named, or every CRD of group when names is
// empty, sorted by name; the objects of a pending CRD are counted. Names
// without a CRD are returned as missing.
func (c *Client) StorageStates(ctx context.Context, group string, names []string) (states []StorageState, missing []string, err error) {
	dyn, err := c.Dynamic()
	if err != nil {
		return nil, nil, err
	}
	var crds []unstructured.Unstructured
	if len(names) == 0 {
		list, err := dyn.Resource(crdGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, nil, c.explain(ctx, err, "list", crdKind, Ref{})
		}
		for _, crd := range list.Items {
			if g, _, _ := unstructured.NestedString(crd.Object, "spec", "group"); g == group {
				crds = append(crds, crd)
			}
		}
	} else {
		for _, name := range names {
			u, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if isObjectNotFound(err) {
				missing = append(missing, name)
				continue
			}
			if err != nil {
				return nil, nil, c.explain(ctx, err, "read", crdKind, Ref{Name: name})
			}
			crds = append(crds, *u)
		}
	}
	for i := range crds {
		s, gvr, err := storageOf(&crds[i])
		if err != nil {
			return nil, nil, err
		}
		s.Objects = -1
		if s.Pending() {
			if s.Objects, err = countObjects(ctx, dyn.Resource(gvr)); err != nil {
				return nil, nil, c.explain(ctx, err, "list", Kind{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Kind: s.Kind}, Ref{})
			}
		}
		states = append(states, s)
	}
	sort.Slice(states, func(i, j int) bool { return states[i].CRD < states[j].CRD })
	return states, missing, nil
}

// storageOf reads a CRD's storage version, stored versions and the
// resource its objects are served at (the storage version).
func storageOf(crd *unstructured.Unstructured) (StorageState, schema.GroupVersionResource, error) {
	s := StorageState{CRD: crd.GetName()}
	s.Kind, _, _ = unstructured.NestedString(crd.Object, "spec", "names", "kind")
	s.Stored, _, _ = unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if storage, _ := m["storage"].(bool); storage {
			s.Storage, _ = m["name"].(string)
		}
	}
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	if s.Storage == "" || plural == "" {
		return s, schema.GroupVersionResource{}, fmt.Errorf("CustomResourceDefinition %s has no storage version", s.CRD)
	}
	return s, schema.GroupVersionResource{Group: group, Version: s.Storage, Resource: plural}, nil
}

// countObjects counts a resource's objects in every namespace: a first page
// of one object carries the count of the rest.
func countObjects(ctx context.Context, res dynamic.NamespaceableResourceInterface) (int, error) {
	opts := metav1.ListOptions{Limit: 1}
	n := 0
	for {
		list, err := res.List(ctx, opts)
		if err != nil {
			return 0, err
		}
		n += len(list.Items)
		if rest := list.GetRemainingItemCount(); rest != nil {
			return n + int(*rest), nil
		}
		if list.GetContinue() == "" {
			return n, nil
		}
		opts.Continue, opts.Limit = list.GetContinue(), migratePage
	}
}

// MigrateStorage rewrites every object of the CRD named at its storage
// version, page by page, calling progress after each page with the objects
// rewritten so far; then sets status.storedVersions to the storage version
// alone. It returns the state read before the migration and the number of
// objects rewritten. Objects deleted meanwhile are skipped; objects changed
// meanwhile are read again and rewritten.
func (c *Client) MigrateStorage(ctx context.Context, name string, progress func(done int)) (StorageState, int, error) {
	dyn, err := c.Dynamic()
	if err != nil {
		return StorageState{}, 0, err
	}
	u, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return StorageState{}, 0, c.explain(ctx, err, "read", crdKind, Ref{Name: name})
	}
	before, gvr, err := storageOf(u)
	if err != nil {
		return before, 0, err
	}
	kind := Kind{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Kind: before.Kind}
	res := dyn.Resource(gvr)
	done := 0
	opts := metav1.ListOptions{Limit: migratePage}
	for {
		list, err := res.List(ctx, opts)
		if apierrors.IsResourceExpired(err) && opts.Continue != "" {
			// The listing outlived etcd's compaction: start over; the
			// objects already rewritten are not written again.
			opts.Continue = ""
			continue
		}
		if err != nil {
			return before, done, c.explain(ctx, err, "list", kind, Ref{})
		}
		for i := range list.Items {
			if err := rewrite(ctx, res, &list.Items[i]); err != nil {
				obj := &list.Items[i]
				return before, done, c.explain(ctx, err, "rewrite", kind, Ref{Namespace: obj.GetNamespace(), Name: obj.GetName()})
			}
			done++
		}
		if progress != nil {
			progress(done)
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			break
		}
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now, _, err := storageOf(u)
		if err != nil {
			return err
		}
		if now.Storage != before.Storage {
			return fmt.Errorf("the storage version of %s changed from %s to %s during the migration: run it again", name, before.Storage, now.Storage)
		}
		if !now.Pending() {
			return nil
		}
		if err := unstructured.SetNestedStringSlice(u.Object, []string{now.Storage}, "status", "storedVersions"); err != nil {
			return err
		}
		_, err = dyn.Resource(crdGVR).UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: FieldManager})
		return err
	})
	if err != nil {
		return before, done, c.explain(ctx, err, "update the status.storedVersions of", crdKind, Ref{Name: name})
	}
	return before, done, nil
}

// rewrite writes obj back unchanged, reading it again when it changed since
// it was listed; an object deleted meanwhile needs no rewrite.
func rewrite(ctx context.Context, res dynamic.NamespaceableResourceInterface, obj *unstructured.Unstructured) error {
	ri := dynamic.ResourceInterface(res)
	if ns := obj.GetNamespace(); ns != "" {
		ri = res.Namespace(ns)
	}
	for attempt := 0; ; attempt++ {
		_, err := ri.Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsConflict(err) || attempt == 4:
			return err
		}
		if obj, err = ri.Get(ctx, obj.GetName(), metav1.GetOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
	}
}
