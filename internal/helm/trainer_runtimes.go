package helm

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Kubeflow Trainer's default runtimes, applied by the provider instead of
// the chart's hook Jobs (see TrainerConfig.Values): rendered from the
// release's own chart and values (DefaultRuntimes), server-side applied with
// the provider's field manager, compared with the cluster at every refresh
// like the release's objects, and deleted with the release.

// TrainerRuntimes renders the default runtimes of the release as installed;
// found is false when the release is not installed.
func (r *Release) TrainerRuntimes(ctx context.Context) (runtimes []*unstructured.Unstructured, found bool, err error) {
	cur, found, err := r.Get(ctx)
	if err != nil || !found {
		return nil, false, err
	}
	if cur.Chart == nil {
		return nil, true, fmt.Errorf("release %s has no chart", r.ID())
	}
	runtimes, err = DefaultRuntimes(cur.Chart, cur.Config, r.Namespace, r.Name)
	return runtimes, true, err
}

// ApplyRuntimes server-side applies the runtimes (taking over fields others
// changed) and waits until they exist.
func (r *Release) ApplyRuntimes(ctx context.Context, runtimes []*unstructured.Unstructured) error {
	r.log("applying %d default runtimes of release %s: %s", len(runtimes), r.ID(), runtimeNames(runtimes))
	if err := r.Client.ApplyObjects(ctx, runtimes, ""); err != nil {
		return fmt.Errorf("applying the default runtimes of %s: %w", r.ID(), err)
	}
	return r.Client.WaitReady(ctx, runtimes, "", r.Log)
}

// RuntimesDrift compares the runtimes with the cluster: the drift lines (a
// runtime deleted, a field changed), how many are in the cluster with the
// installer's label, and the runtimes that could not be checked.
func (r *Release) RuntimesDrift(ctx context.Context, runtimes []*unstructured.Unstructured) (lines []string, present int, unchecked []string) {
	for _, d := range r.Client.Drift(ctx, runtimes, "") {
		switch {
		case d.Err != nil:
			unchecked = append(unchecked, d.Err.Error())
			continue
		case !d.Missing:
			labelled := true
			for _, c := range d.Changes {
				if strings.Contains(c.Path, RuntimeManagedByLabel) {
					labelled = false
				}
			}
			if labelled {
				present++
			}
		}
		lines = append(lines, d.Lines()...)
	}
	sort.Strings(lines)
	return lines, present, unchecked
}

// DeleteRuntimes deletes the runtimes and waits until they are gone.
func (r *Release) DeleteRuntimes(ctx context.Context, runtimes []*unstructured.Unstructured) error {
	r.log("deleting the default runtimes of release %s: %s", r.ID(), runtimeNames(runtimes))
	for _, o := range runtimes {
		if err := r.Client.DeleteObject(ctx, o); err != nil {
			return fmt.Errorf("deleting default runtime %s of %s: %w", o.GetName(), r.ID(), err)
		}
	}
	return nil
}

func runtimeNames(runtimes []*unstructured.Unstructured) string {
	names := make([]string, len(runtimes))
	for i, o := range runtimes {
		names[i] = o.GetName()
	}
	return strings.Join(names, ", ")
}
