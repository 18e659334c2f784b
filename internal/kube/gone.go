package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// goneReport is how often WaitGone reports the objects still present.
const goneReport = 15 * time.Second

// goneSettle is how long after every object is gone WaitGone looks once more
// at the ClusterRoles among them: the aggregation controller's re-creation
// follows the deletion of a source role by milliseconds, and may come just
// after a poll saw the aggregated role gone.
const goneSettle = time.Second

// WaitGone waits until every object of objs — deleted already, by Helm's
// uninstall — is gone, or ctx ends. An object found again that deleteAgain
// says was re-created by a controller is deleted again: kube-controller-
// manager's ClusterRole aggregation controller force-applies an aggregated
// ClusterRole from its informer's cache when one of its source roles
// changes, so deleting the aggregated role together with its sources can
// bring it back (created anew, with nothing but the controller's rules),
// and a wait that only polls would wait for it forever. progress receives a
// line at least every 15 s; the error names each object still present and
// its finalizers.
func (c *Client) WaitGone(ctx context.Context, objs []*unstructured.Unstructured, defaultNamespace string,
	deleteAgain func(live *unstructured.Unstructured) bool, progress func(string)) error {
	pending := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		pending[ObjectName(o)] = o
	}
	start, lastReport, settled := time.Now(), time.Now(), deleteAgain == nil
	for {
		names := make([]string, 0, len(pending))
		for n := range pending {
			names = append(names, n)
		}
		sort.Strings(names)
		present := make([]string, len(names)) // "" when gone, else why it is still there
		forEach(len(names), driftWorkers, func(i int) {
			present[i] = c.stillThere(ctx, pending[names[i]], defaultNamespace, deleteAgain, progress)
		})
		var left []string
		for i, n := range names {
			if present[i] == "" {
				delete(pending, n)
			} else {
				left = append(left, n+present[i])
			}
		}
		if len(pending) == 0 && settled {
			return nil
		}
		if len(pending) == 0 {
			settled = true
			for _, o := range objs {
				if o.GetKind() == "ClusterRole" {
					pending[ObjectName(o)] = o
				}
			}
			if len(pending) == 0 {
				return nil
			}
			select {
			case <-ctx.Done():
				return nil // gone, and no time left to look again
			case <-time.After(goneSettle):
			}
			continue
		}
		if progress != nil && time.Since(lastReport) >= goneReport {
			progress(fmt.Sprintf("%d of %d objects still present after %s: %s", len(left), len(objs),
				time.Since(start).Round(time.Second), strings.Join(left, ", ")))
			lastReport = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d objects still present after %s: %s: %w", len(left), len(objs),
				time.Since(start).Round(time.Second), strings.Join(left, ", "), ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// stillThere is "" when obj is gone, else a note on why it is still there
// (its finalizers); an object deleteAgain picks is deleted again.
func (c *Client) stillThere(ctx context.Context, obj *unstructured.Unstructured, defaultNamespace string,
	deleteAgain func(*unstructured.Unstructured) bool, progress func(string)) string {
	ri, _, err := c.ObjectClient(obj.DeepCopy(), defaultNamespace)
	if isNoMatch(err) {
		return "" // its kind is gone: its CRD went first
	}
	if err != nil {
		return fmt.Sprintf(" (%v)", err)
	}
	live, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
	switch {
	case isObjectNotFound(err):
		return ""
	case err != nil:
		return fmt.Sprintf(" (%v)", err)
	}
	if live.GetDeletionTimestamp() == nil && deleteAgain != nil && deleteAgain(live) {
		if progress != nil {
			progress(fmt.Sprintf("%s was re-created by %s after the uninstall deleted it: deleting it again",
				ObjectName(obj), strings.Join(Managers(live), ", ")))
		}
		policy := metav1.DeletePropagationBackground
		if err := ri.Delete(ctx, live.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy,
			Preconditions: metav1.NewUIDPreconditions(string(live.GetUID()))}); err != nil && !isObjectNotFound(err) {
			return fmt.Sprintf(" (deleting it again: %v)", err)
		}
		return " (deleted again)"
	}
	if live.GetDeletionTimestamp() != nil {
		if f := live.GetFinalizers(); len(f) > 0 {
			return fmt.Sprintf(" (being deleted; finalizers %s)", strings.Join(f, ", "))
		}
		return " (being deleted)"
	}
	return fmt.Sprintf(" (present, not being deleted; written by %s)", strings.Join(Managers(live), ", "))
}

// Managers are the field managers of obj, in the order they are recorded.
func Managers(obj *unstructured.Unstructured) []string {
	var out []string
	for _, f := range obj.GetManagedFields() {
		out = append(out, f.Manager)
	}
	return out
}

// AggregationManager is the field manager of kube-controller-manager's
// ClusterRole aggregation controller.
const AggregationManager = "clusterrole-aggregation-controller"

// RecreatedByAggregation reports whether live is a ClusterRole that only
// the ClusterRole aggregation controller has written: one it re-created
// after the object was deleted (a ClusterRole installed by anyone else also
// has that installer's field manager). When every source role is gone too,
// the controller applies no rules at all, and the server keeps no
// managedFields entry for an apply that sets nothing: the re-created role
// then has no manager and no rules (seen with kube-controller-manager
// v1.36, where Kueue's destroy waited out its timeout on such a role).
func RecreatedByAggregation(live *unstructured.Unstructured) bool {
	if live.GetKind() != "ClusterRole" || live.GroupVersionKind().Group != "rbac.authorization.k8s.io" {
		return false
	}
	m := Managers(live)
	for _, n := range m {
		if n != AggregationManager {
			return false
		}
	}
	if len(m) > 0 {
		return true
	}
	rules, _, _ := unstructured.NestedSlice(live.Object, "rules")
	_, aggregated := live.Object["aggregationRule"]
	return len(rules) == 0 && !aggregated
}
