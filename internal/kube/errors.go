package kube

import (
	"context"
	"encoding/json"
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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
			// Wrapped so Conflicts can read the causes. No advice to force
			// here: what a forced apply would also change is only known
			// from a dry run (see conflictError).
			return &conflictError{err: err, msg: fmt.Sprintf("cannot %s: fields this resource sets are owned by another field manager:\n%s\n"+
				"Remove those fields from the configuration or have the other manager release them", what, owners)}
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

// conflictError is an apply conflict explained; it unwraps to the server's
// error so Conflicts can read its causes.
type conflictError struct {
	msg string
	err error
}

func (e *conflictError) Error() string { return e.msg }
func (e *conflictError) Unwrap() error { return e.err }

// applyError explains an apply's error. A conflict is explained by a dry run
// of the same apply, forced (see PreviewApply): which fields force_conflicts
// would take from whom, and what else in the live object it would change —
// so the advice to force never comes without its cost. obj is the applied
// object (any value that marshals to one).
func (c *Client) applyError(ctx context.Context, err error, k Kind, ref Ref, obj any) error {
	explained := c.explain(ctx, err, "apply", k, ref)
	if Conflicts(err) == nil {
		return explained
	}
	u, uerr := toUnstructured(obj)
	if uerr != nil {
		return explained
	}
	p, perr := c.PreviewApply(ctx, k, u, false, LeafPaths(u.Object))
	if perr != nil || !p.Forced() {
		return &conflictError{err: err, msg: fmt.Sprintf("%s\n(What force_conflicts = true would change could not be computed: %v.)", explained, perr)}
	}
	return &conflictError{err: err, msg: fmt.Sprintf("cannot apply %s %q: %s\n"+
		"Remove those fields from the configuration, have the other manager release them, or, if the changes above are intended, "+
		"set force_conflicts = true in the provider block.", k.Kind, ref.String(), p.ConflictText())}
}

func toUnstructured(obj any) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	return u, u.UnmarshalJSON(b)
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
