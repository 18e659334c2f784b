package kube

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestParseImportID(t *testing.T) {
	cases := []struct {
		id         string
		namespaced bool
		want       Ref
		err        string
	}{
		{"h100", false, Ref{Name: "h100"}, ""},
		{"default/q", true, Ref{Namespace: "default", Name: "q"}, ""},
		{"q", true, Ref{}, `expected "namespace/name"`},
		{"default/q", false, Ref{}, "cluster-scoped"},
		{"a/b/c", true, Ref{}, `expected "namespace/name"`},
		{"/q", true, Ref{}, `expected "namespace/name"`},
		{"", false, Ref{}, "cluster-scoped"},
	}
	for _, c := range cases {
		got, err := ParseImportID(c.id, c.namespaced)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseImportID(%q, %v) error = %v, want %q", c.id, c.namespaced, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseImportID(%q, %v) = %v, %v; want %v", c.id, c.namespaced, got, err, c.want)
		}
	}
}

var gr = schema.GroupResource{Group: "kueue.x-k8s.io", Resource: "clusterqueues"}

// The two 404s the server gives: a missing object comes as a Status naming it;
// an unserved resource as a plain page, which client-go turns into a generic
// error carrying the body as an UnexpectedServerResponse cause.
func TestObjectNotFoundVersusResourceNotServed(t *testing.T) {
	missingObject := apierrors.NewNotFound(gr, "research")
	unserved := apierrors.NewGenericServerResponse(404, "GET", gr, "research", "404 page not found", 0, true)
	if !isObjectNotFound(missingObject) || isResourceNotServed(missingObject) {
		t.Errorf("missing object misclassified")
	}
	if isObjectNotFound(unserved) || !isResourceNotServed(unserved) {
		t.Errorf("unserved resource misclassified")
	}
	c := &Client{rest: nil}
	k := Kind{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues", Kind: "ClusterQueue", Missing: "the Kueue CRDs are not installed"}
	c.rest = restForTest()
	err := c.explain(t.Context(), unserved, "read", k, Ref{Name: "research"})
	if !strings.Contains(err.Error(), "the Kueue CRDs are not installed") {
		t.Errorf("explain(unserved) = %v", err)
	}
}

func TestConflictNamesManagerAndField(t *testing.T) {
	status := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 409, Reason: metav1.StatusReasonConflict,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{
			{Type: metav1.CauseTypeFieldManagerConflict, Field: ".spec.cohortName", Message: `conflict with "kubectl-edit" using kueue.x-k8s.io/v1beta2`},
		}},
	}}
	c := &Client{rest: restForTest()}
	err := c.explain(t.Context(), status, "apply", Kind{Kind: "ClusterQueue"}, Ref{Name: "research"})
	for _, want := range []string{".spec.cohortName", `"kubectl-edit"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("conflict error %q lacks %q", err, want)
		}
	}
	// Without a dry run nothing says what forcing would also change, so
	// the explanation alone does not advise it.
	if strings.Contains(err.Error(), "force_conflicts") {
		t.Errorf("conflict error advises force_conflicts without its cost: %q", err)
	}
	if got := Conflicts(err); len(got) != 1 || got[0].Field != ".spec.cohortName" || got[0].Manager != "kubectl-edit" {
		t.Errorf("Conflicts(explained error) = %+v, want the one cause", got)
	}
}
