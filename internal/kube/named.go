package kube

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
)

// ObjectsNamed lists the objects of kind k named name in every namespace
// (k namespaced), e.g. the LocalQueues a cluster-wide training runtime's
// TrainJobs may name. A kind the server does not serve has none.
func (c *Client) ObjectsNamed(ctx context.Context, k Kind, name string) ([]unstructured.Unstructured, error) {
	kv := c.version(k)
	for {
		ri, err := c.resource(kv, Ref{})
		if err != nil {
			return nil, err
		}
		list, err := ri.List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if isResourceNotServed(err) {
			if next, ok := c.fallback(ctx, k, kv); ok {
				kv = next
				continue
			}
			return nil, nil
		}
		if err != nil {
			return nil, c.explain(ctx, err, "list", kv, Ref{Name: name})
		}
		for i := range list.Items {
			convert(k, kv, &list.Items[i], false)
		}
		return list.Items, nil
	}
}
