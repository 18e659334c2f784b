package kube

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// Other clusters, and the objects that describe them: a client built from a
// kubeconfig's content (a MultiKueue worker, whose kubeconfig is a Secret in
// the manager), the Secret itself, and lists of objects of a kind.

// probeTimeout bounds each request to another cluster made at plan time: an
// unreachable worker should not hold a plan for the default 30 s per request.
const probeTimeout = 10 * time.Second

// NewClientFromKubeconfig builds a client for the cluster of a kubeconfig's
// current context, without contacting it. Its requests time out after 10 s.
func NewClientFromKubeconfig(data []byte) (*Client, error) {
	rc, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("parsing the kubeconfig: %w", err)
	}
	rc.Timeout = probeTimeout
	c := NewClientFromREST(rc, false)
	c.rest.Timeout = probeTimeout
	return c, nil
}

// ServerVersion asks the API server for its version: the cheapest request
// that tells whether the cluster is reachable with these credentials.
func (c *Client) ServerVersion() (string, error) {
	typed, err := c.Typed()
	if err != nil {
		return "", err
	}
	v, err := typed.Discovery().ServerVersion()
	if err != nil {
		return "", fmt.Errorf("%s: %w", c.rest.Host, err)
	}
	return v.GitVersion, nil
}

// SecretData returns one key of a Secret's data; found is false when the
// Secret or the key does not exist.
func (c *Client) SecretData(ctx context.Context, ref Ref, key string) (data []byte, found bool, err error) {
	typed, err := c.Typed()
	if err != nil {
		return nil, false, err
	}
	s, found, err := getTyped(ctx, c, SecretKind, ref, func() (*corev1.Secret, error) {
		return typed.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	})
	if err != nil || !found {
		return nil, false, err
	}
	data, found = s.Data[key]
	return data, found, nil
}

// ApplySecret server-side applies an Opaque Secret holding exactly data,
// with the given labels.
func (c *Client) ApplySecret(ctx context.Context, ref Ref, labels map[string]string, data map[string][]byte) error {
	typed, err := c.Typed()
	if err != nil {
		return err
	}
	ac := corev1ac.Secret(ref.Name, ref.Namespace).WithType(corev1.SecretTypeOpaque).WithLabels(labels).WithData(data)
	if _, err := typed.CoreV1().Secrets(ref.Namespace).Apply(ctx, ac, c.applyOptions()); err != nil {
		// Not applyError: it would quote the object, and this one is a secret.
		return c.explain(ctx, err, "apply", SecretKind, ref)
	}
	return nil
}

// DeleteSecret deletes a Secret; a missing one is not an error.
func (c *Client) DeleteSecret(ctx context.Context, ref Ref) error {
	typed, err := c.Typed()
	if err != nil {
		return err
	}
	err = typed.CoreV1().Secrets(ref.Namespace).Delete(ctx, ref.Name, metav1.DeleteOptions{})
	if err != nil && !isObjectNotFound(err) {
		return c.explain(ctx, err, "delete", SecretKind, ref)
	}
	return nil
}

// List lists the objects of kind k (in namespace, or in every namespace when
// namespace is empty), at k's version, falling back like Get.
func (c *Client) List(ctx context.Context, k Kind, namespace string) ([]unstructured.Unstructured, error) {
	kv := c.version(k)
	for {
		dyn, err := c.Dynamic()
		if err != nil {
			return nil, err
		}
		ri := dyn.Resource(kv.GVR())
		var list *unstructured.UnstructuredList
		if k.Namespaced && namespace != "" {
			list, err = ri.Namespace(namespace).List(ctx, metav1.ListOptions{})
		} else {
			list, err = ri.List(ctx, metav1.ListOptions{})
		}
		if isResourceNotServed(err) {
			if next, ok := c.fallback(ctx, k, kv); ok {
				kv = next
				continue
			}
		}
		if err != nil {
			return nil, c.explain(ctx, err, "list", kv, Ref{Namespace: namespace, Name: "*"})
		}
		for i := range list.Items {
			convert(k, kv, &list.Items[i], false)
		}
		return list.Items, nil
	}
}

// SecretLabels returns a Secret's labels (not its data).
func (c *Client) SecretLabels(ctx context.Context, ref Ref) (labels map[string]string, found bool, err error) {
	typed, err := c.Typed()
	if err != nil {
		return nil, false, err
	}
	s, found, err := getTyped(ctx, c, SecretKind, ref, func() (*corev1.Secret, error) {
		return typed.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	})
	if err != nil || !found {
		return nil, found, err
	}
	return s.Labels, true, nil
}

// MergePatch sends a JSON merge patch (lists in it replace the live lists
// whole) with the provider's field manager and returns the object at k's
// version: for a set-typed list (listType=set) whose elements another field
// manager added, which a server-side apply keeps.
func (c *Client) MergePatch(ctx context.Context, k Kind, ref Ref, patch map[string]any) (*unstructured.Unstructured, error) {
	kv := c.version(k)
	body := &unstructured.Unstructured{Object: patch}
	if kv.Version != k.Version {
		body = body.DeepCopy()
		convert(k, kv, body, true)
		unstructured.RemoveNestedField(body.Object, "apiVersion")
	}
	data, err := body.MarshalJSON()
	if err != nil {
		return nil, err
	}
	ri, err := c.resource(kv, ref)
	if err != nil {
		return nil, err
	}
	out, err := ri.Patch(ctx, ref.Name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, c.explain(ctx, err, "patch", kv, ref)
	}
	convert(k, kv, out, false)
	return out, nil
}
