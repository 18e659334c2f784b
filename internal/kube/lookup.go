package kube

import (
	"context"
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Look-ups across namespaces for software installed by anyone (Helm, kubectl,
// an operator): what the conflict rules between installs need to see.

var (
	crdGVR  = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
	crdKind = Kind{Group: crdGVR.Group, Version: crdGVR.Version, Resource: crdGVR.Resource, Kind: "CustomResourceDefinition"}
)

// CRD returns the CustomResourceDefinition named e.g.
// "podgroups.scheduling.volcano.sh", or nil when there is none.
func (c *Client) CRD(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	u, err := c.crdObject(ctx, name)
	if err != nil || u == nil {
		return nil, err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
		return nil, err
	}
	return &crd, nil
}

// crdObject is the CRD named, nil when there is none.
func (c *Client) crdObject(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	dyn, err := c.Dynamic()
	if err != nil {
		return nil, err
	}
	u, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
	if isObjectNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, c.explain(ctx, err, "read", crdKind, Ref{Name: name})
	}
	return u, nil
}

// StoredVersions is status.storedVersions of every CRD of group, by CRD
// name: the API versions objects of each may still be stored at. An empty
// map when the group has no CRD.
func (c *Client) StoredVersions(ctx context.Context, group string) (map[string][]string, error) {
	crds, err := c.crdsOfGroup(ctx, group)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, crd := range crds {
		out[crd.GetName()], _, _ = unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
	}
	return out, nil
}

// crdsOfGroup are the CRDs of an API group, read from this run's listing of
// CRDs when there is one (see the read cache).
func (c *Client) crdsOfGroup(ctx context.Context, group string) ([]*unstructured.Unstructured, error) {
	dyn, err := c.Dynamic()
	if err != nil {
		return nil, err
	}
	items, err := c.reads.listing(ctx, dyn.Resource(crdGVR), kindKey{gvr: crdGVR})
	if err != nil || items == nil {
		list, err := dyn.Resource(crdGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, c.explain(ctx, err, "list", crdKind, Ref{})
		}
		items = map[string]*unstructured.Unstructured{}
		for i := range list.Items {
			items[list.Items[i].GetName()] = &list.Items[i]
		}
	}
	var out []*unstructured.Unstructured
	for _, crd := range items {
		if g, _, _ := unstructured.NestedString(crd.Object, "spec", "group"); g == group {
			out = append(out, crd)
		}
	}
	return out, nil
}

// DeploymentsNamed lists the Deployments of that name in every namespace,
// plus those matching labelSelector when it is not empty.
func (c *Client) DeploymentsNamed(ctx context.Context, name, labelSelector string) ([]appsv1.Deployment, error) {
	typed, err := c.Typed()
	if err != nil {
		return nil, err
	}
	if objs, ok, err := c.named(ctx, schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, name, labelSelector); err != nil || ok {
		return fromUnstructured[appsv1.Deployment](objs, err)
	}
	seen := map[string]bool{}
	var out []appsv1.Deployment
	for _, opts := range listOptions(name, labelSelector) {
		list, err := typed.AppsV1().Deployments("").List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing Deployments at %s: %w", c.Host(), err)
		}
		for _, d := range list.Items {
			if key := d.Namespace + "/" + d.Name; !seen[key] {
				seen[key] = true
				out = append(out, d)
			}
		}
	}
	return out, nil
}

// ConfigMapsNamed lists the ConfigMaps of that name in every namespace, plus
// those matching labelSelector when it is not empty.
func (c *Client) ConfigMapsNamed(ctx context.Context, name, labelSelector string) ([]corev1.ConfigMap, error) {
	typed, err := c.Typed()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []corev1.ConfigMap
	for _, opts := range listOptions(name, labelSelector) {
		list, err := typed.CoreV1().ConfigMaps("").List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing ConfigMaps at %s: %w", c.Host(), err)
		}
		for _, cm := range list.Items {
			if key := cm.Namespace + "/" + cm.Name; !seen[key] {
				seen[key] = true
				out = append(out, cm)
			}
		}
	}
	return out, nil
}

// named are the objects of a namespaced kind, in every namespace, named
// name or matching labelSelector, from this run's listing of the kind (one
// listing for every such lookup of a plan: each install's conflict rules
// look for other controllers' Deployments; ConfigMaps are still found with
// selectors, since a cluster's may be large documents); ok=false when the
// kind is not listed (more than listLimit objects, or a role without list),
// and the caller asks the server with selectors.
func (c *Client) named(ctx context.Context, gvr schema.GroupVersionResource, name, labelSelector string) ([]*unstructured.Unstructured, bool, error) {
	sel := labels.Nothing()
	if labelSelector != "" {
		var err error
		if sel, err = labels.Parse(labelSelector); err != nil {
			return nil, false, err
		}
	}
	dyn, err := c.Dynamic()
	if err != nil {
		return nil, false, err
	}
	items, err := c.reads.listing(ctx, dyn.Resource(gvr), kindKey{gvr: gvr})
	if err != nil || items == nil {
		return nil, false, nil // the selectors' listings say why, if it persists
	}
	keys := make([]string, 0, len(items))
	for k, o := range items {
		if o.GetName() == name || sel.Matches(labels.Set(o.GetLabels())) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]*unstructured.Unstructured, len(keys))
	for i, k := range keys {
		out[i] = items[k]
	}
	return out, true, nil
}

func fromUnstructured[T any](objs []*unstructured.Unstructured, err error) ([]T, error) {
	if err != nil {
		return nil, err
	}
	out := make([]T, len(objs))
	for i, o := range objs {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func listOptions(name, labelSelector string) []metav1.ListOptions {
	out := []metav1.ListOptions{{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}}
	if labelSelector != "" {
		out = append(out, metav1.ListOptions{LabelSelector: labelSelector})
	}
	return out
}

// DeleteObject deletes an object of any kind (found by discovery) and waits
// until it is gone or ctx ends. A missing object is not an error.
func (c *Client) DeleteObject(ctx context.Context, obj *unstructured.Unstructured) error {
	obj = obj.DeepCopy()
	ri, _, err := c.ObjectClient(obj, "")
	if isNoMatch(err) {
		return nil
	}
	if err != nil {
		return err
	}
	policy := metav1.DeletePropagationBackground
	err = ri.Delete(ctx, obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy})
	if isObjectNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if isObjectNotFound(err) {
			return true, nil
		}
		return false, err
	})
}
