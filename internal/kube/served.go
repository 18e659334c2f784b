package kube

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Served tells whether the API server serves k at its own version (its CRD
// is installed and established), by one discovery request for the group
// version. It does not consult Alternates.
func (c *Client) Served(ctx context.Context, k Kind) (bool, error) {
	typed, err := c.Typed()
	if err != nil {
		return false, err
	}
	list, err := typed.Discovery().ServerResourcesForGroupVersion(k.APIVersion())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, c.explain(ctx, err, "discover", k, Ref{Name: "*"})
	}
	for _, r := range list.APIResources {
		if r.Name == k.Resource {
			return true, nil
		}
	}
	return false, nil
}
