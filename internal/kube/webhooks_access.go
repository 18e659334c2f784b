package kube

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The webhook probes ask before they request. A server-side dry run is
// authorized as the request it rehearses — a dry-run create needs create —
// and the identity the provider runs as may be a least-privilege one
// (examples/rbac) that holds create on none, or only some, of the kinds a
// webhook matches. A refused request is no answer from the webhook, and it
// is a 403 in the API server's audit log that the RBAC audits (and a
// cluster's admins) read as the provider overstepping its role. So each
// request a probe would make is first put to the API server as a
// SelfSubjectAccessReview, which every authenticated identity may create
// (system:basic-user): only allowed requests are made; a webhook left with
// none is named as not probed, with the rule that would let it be.

// accessKey is one access review's question.
type accessKey struct {
	verb      string
	gvr       schema.GroupVersionResource
	namespace string
}

func (k accessKey) rule() string {
	return fmt.Sprintf("{apiGroups: [%q], resources: [%q], verbs: [%q]}", k.gvr.Group, k.gvr.Resource, k.verb)
}

// may reports whether the provider's identity may make the request. When
// the review itself cannot be made, the answer is yes: the request is then
// made and a refusal classified as blocked, as before reviews were asked.
func (e *probeEnv) may(ctx context.Context, verb string, gvr schema.GroupVersionResource, namespace string) bool {
	k := accessKey{verb: verb, gvr: gvr, namespace: namespace}
	if v, ok := e.access[k]; ok {
		return v
	}
	typed, err := e.c.Typed()
	if err != nil {
		return true
	}
	r, err := typed.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: verb, Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Namespace: namespace,
		}},
	}, metav1.CreateOptions{})
	allowed := err != nil || r.Status.Allowed
	e.access[k] = allowed
	if !allowed {
		e.denied = append(e.denied, k)
	}
	return allowed
}

// deniedSince is why a webhook has no probe when the identity may not make
// the requests reviewed after mark (len(e.denied) before planning it).
func (e *probeEnv) deniedSince(mark int) string {
	if len(e.denied) <= mark {
		return ""
	}
	msg := "the provider's identity may not make the dry-run requests through it (a dry run is authorized as the request itself); a role with"
	seen := map[string]bool{}
	for _, k := range e.denied[mark:] {
		if r := k.rule(); !seen[r] {
			seen[r] = true
			msg += " " + r
		}
	}
	return msg + " would let it be probed"
}
