package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sort"
	"strings"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func asAPIStatus(err error, out *apierrors.APIStatus) bool {
	return errors.As(err, out)
}

// explain turns an API error into one a user can act on.
func (c *Client) explain(ctx context.Context, err error, verb string, k Kind, ref Ref) error {
	what := fmt.Sprintf("%s %s %q", verb, k.Kind, ref.String())
	switch {
	case isResourceNotServed(err):
		if k.Missing != "" {
			return fmt.Errorf("cannot %s: %s (the API server does not serve %s/%s)", what, k.Missing, k.APIVersion(), k.Resource)
		}
		return fmt.Errorf("cannot %s: the API server does not serve %s/%s; is its CRD installed?", what, k.APIVersion(), k.Resource)
	case apierrors.IsConflict(err):
		if owners := conflictOwners(err); owners != "" {
			return fmt.Errorf("cannot %s: fields this resource sets are owned by another field manager:\n%s\n"+
				"Remove those fields from the configuration, have the other manager release them, "+
				"or set force_conflicts = true in the provider block to take ownership", what, owners)
		}
		return fmt.Errorf("cannot %s: %w", what, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("cannot %s: the provider's credentials are not allowed to: %w", what, err)
	case apierrors.IsInvalid(err):
		return fmt.Errorf("cannot %s: the API server rejected it: %w", what, err)
	case strings.Contains(err.Error(), "failed calling webhook"):
		return fmt.Errorf("cannot %s: an admission webhook for this object is unreachable or failing (is its controller running?): %w", what, err)
	}
	if timedOut(err) {
		return fmt.Errorf("cannot %s: timed out after %s talking to the Kubernetes API server at %s (request_timeout): %w", what, c.rest.Timeout, c.Host(), err)
	}
	if unreachable(err) {
		return fmt.Errorf("cannot %s: cannot reach the Kubernetes API server at %s: %w", what, c.Host(), err)
	}
	return fmt.Errorf("cannot %s: %w", what, err)
}

// conflictOwners lists "  .spec.x (owned by "kubectl-edit")" lines from an
// apply conflict's causes.
func conflictOwners(err error) string {
	var status apierrors.APIStatus
	if !asAPIStatus(err, &status) || status.Status().Details == nil {
		return ""
	}
	var lines []string
	for _, c := range status.Status().Details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		lines = append(lines, fmt.Sprintf("  %s: %s", c.Field, c.Message))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func timedOut(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) ||
		(errors.As(err, &netErr) && netErr.Timeout())
}

// unreachable is any failure below HTTP: refused, reset, EOF, a connection
// lost mid-request (the server stopped), TLS failures. API answers are
// StatusErrors and never get here.
func unreachable(err error) bool {
	var urlErr *url.Error
	var opErr *net.OpError
	return errors.As(err, &urlErr) || errors.As(err, &opErr) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) ||
		strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "no such host") ||
		strings.Contains(err.Error(), "http2: client connection lost")
}
