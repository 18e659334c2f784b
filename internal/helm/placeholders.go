package helm

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// withoutPlaceholders returns the objects to compare with the cluster and
// to put back: the release's objects without what a chart renders only as a
// placeholder for a controller to fill in. Today that is the data keys of a
// Secret rendered with an empty value: JobSet's chart renders its webhook
// Secret with ca.crt, ca.key, tls.crt and tls.key "", and JobSet's cert
// rotator writes the certificates into them (taking the fields over).
// Compared as they are, the certificates would show as drift at every
// refresh, and putting them back would wipe the webhook's certificates.
// Left out, a dry-run apply neither reports nor changes them (the
// provider's field manager no longer owns them once the controller wrote
// them). The objects given are not changed.
func withoutPlaceholders(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o
		if o.GetKind() != "Secret" || o.GetAPIVersion() != "v1" {
			continue
		}
		var c *unstructured.Unstructured
		for _, field := range []string{"data", "stringData"} {
			data, ok := o.Object[field].(map[string]any)
			if !ok {
				continue
			}
			for k, v := range data {
				if v != "" && v != nil {
					continue
				}
				if c == nil {
					c = o.DeepCopy()
				}
				m := c.Object[field].(map[string]any)
				delete(m, k)
				if len(m) == 0 {
					delete(c.Object, field)
				}
			}
		}
		if c != nil {
			out[i] = c
		}
	}
	return out
}
