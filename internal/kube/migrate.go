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

	gvr schema.GroupVersionResource // the objects, at the storage version
}

// Pending reports whether objects may be stored at a version other than
// the storage version.
func (s StorageState) Pending() bool {
	return len(s.Stored) != 1 || s.Stored[0] != s.Storage
}

// StorageStates reads the CRDs named, or every CRD of group when names is
// empty, sorted by name. Names without a CRD are returned as missing.
func (c *Client) StorageStates(ctx context.Context, group string, names []string) (states []StorageState, missing []string, err error) {
	var crds []*unstructured.Unstructured
	if len(names) == 0 {
		if crds, err = c.crdsOfGroup(ctx, group); err != nil {
			return nil, nil, err
		}
	} else {
		for _, name := range names {
			crd, err := c.crdObject(ctx, name)
			if err != nil {
				return nil, nil, err
			}
			if crd == nil {
				missing = append(missing, name)
				continue
			}
			crds = append(crds, crd)
		}
	}
	for _, crd := range crds {
		s, err := storageOf(crd)
		if err != nil {
			return nil, nil, err
		}
		states = append(states, s)
	}
	sort.Slice(states, func(i, j int) bool { return states[i].CRD < states[j].CRD })
	return states, missing, nil
}

// storageOf reads a CRD's storage version, stored versions and the
// resource its objects are served at (the storage version).
func storageOf(crd *unstructured.Unstructured) (StorageState, error) {
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
		return s, fmt.Errorf("CustomResourceDefinition %s has no storage version", s.CRD)
	}
	s.gvr = schema.GroupVersionResource{Group: group, Version: s.Storage, Resource: plural}
	return s, nil
}

func (s StorageState) kind() Kind {
	return Kind{Group: s.gvr.Group, Version: s.gvr.Version, Resource: s.gvr.Resource, Kind: s.Kind}
}

// CountObjects counts a CRD's objects in every namespace: a first page of
// one object carries the count of the rest.
func (c *Client) CountObjects(ctx context.Context, s StorageState) (int, error) {
	dyn, err := c.Dynamic()
	if err != nil {
		return 0, err
	}
	opts := metav1.ListOptions{Limit: 1}
	n := 0
	for {
		list, err := dyn.Resource(s.gvr).List(ctx, opts)
		if err != nil {
			return 0, c.explain(ctx, err, "list", s.kind(), Ref{})
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
	before, err := storageOf(u)
	if err != nil {
		return before, 0, err
	}
	kind := before.kind()
	res := dyn.Resource(before.gvr)
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
		now, err := storageOf(u)
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
