package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// readyPoll is how often WaitReady looks at the objects not yet ready.
const readyPoll = time.Second

// WaitReady waits until every object is Current by kstatus' rules
// (Deployments available with the desired replicas of the current
// generation, CRDs Established, Jobs complete, objects with conditions
// Ready, everything else once it exists) or ctx ends. progress receives a
// line whenever the set of objects still waited for changes, and at least
// every 15 s. The error names each object not ready and why.
func (c *Client) WaitReady(ctx context.Context, objs []*unstructured.Unstructured, defaultNamespace string, progress func(string)) error {
	pending := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		o = o.DeepCopy()
		_, _, _ = c.ObjectClient(o, defaultNamespace) // settles the namespace when the kind is known
		pending[ObjectName(o)] = o
	}
	start := time.Now()
	reasons := map[string]string{}
	lastReport, lastSummary := time.Time{}, ""
	for {
		names := make([]string, 0, len(pending))
		for n := range pending {
			names = append(names, n)
		}
		results := make([]string, len(names))
		forEach(len(names), driftWorkers, func(i int) {
			results[i] = c.readiness(ctx, pending[names[i]], defaultNamespace)
		})
		for i, n := range names {
			if results[i] == "" {
				delete(pending, n)
				delete(reasons, n)
			} else {
				reasons[n] = results[i]
			}
		}
		if len(pending) == 0 {
			if progress != nil {
				progress(fmt.Sprintf("all %d objects ready after %s", len(objs), time.Since(start).Round(100*time.Millisecond)))
			}
			return nil
		}
		summary := describePending(reasons)
		if progress != nil && (summary != lastSummary || time.Since(lastReport) >= 15*time.Second) {
			progress(fmt.Sprintf("%d of %d objects ready after %s; waiting for %s",
				len(objs)-len(pending), len(objs), time.Since(start).Round(time.Second), summary))
			lastReport, lastSummary = time.Now(), summary
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d objects not ready after %s:\n  %s",
				len(pending), len(objs), time.Since(start).Round(time.Second), strings.ReplaceAll(describePending(reasons), "; ", "\n  "))
		case <-time.After(readyPoll):
		}
	}
}

// readiness returns "" when obj is Current, else why not.
func (c *Client) readiness(ctx context.Context, obj *unstructured.Unstructured, defaultNamespace string) string {
	ri, _, err := c.ObjectClient(obj, defaultNamespace)
	if err != nil {
		return "kind not served yet: " + err.Error()
	}
	live, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if isObjectNotFound(err) {
		return "not found"
	}
	if err != nil {
		return err.Error()
	}
	res, err := status.Compute(live)
	if err != nil {
		return err.Error()
	}
	if res.Status == status.CurrentStatus {
		return ""
	}
	if res.Message == "" {
		return string(res.Status)
	}
	return string(res.Status) + ": " + res.Message
}

func describePending(reasons map[string]string) string {
	parts := make([]string, 0, len(reasons))
	for n, r := range reasons {
		parts = append(parts, n+" ("+r+")")
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}
