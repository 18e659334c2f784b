package helm

import (
	"context"
	"fmt"
	"sort"

	"helm.sh/helm/v3/pkg/release"
)

// DriftReport is how a release differs from the cluster.
type DriftReport struct {
	// Lines are the drifted fields, "Kind/namespace/name: path live → want",
	// and release-level problems (a failed or pending revision), sorted.
	Lines []string
	// Unchecked are objects whose dry run failed (not counted as drift).
	Unchecked []string
	Objects   int // objects compared
	DryRuns   int // of which the server's dry run compared (the rest locally)
}

// Drift compares every object of the release's manifest, and the CRDs of
// its chart's crds/ directory, with the live cluster (see
// kube.Client.Drift).
func (r *Release) Drift(ctx context.Context, rel *release.Release) (DriftReport, error) {
	var rep DriftReport
	if st := rel.Info.Status; st != release.StatusDeployed {
		rep.Lines = append(rep.Lines, fmt.Sprintf("Release %s: revision %d is %s, not deployed", r.ID(), rel.Version, st))
	}
	objs, err := ReleaseObjects(rel)
	if err != nil {
		return rep, err
	}
	rep.Objects = len(objs)
	for _, d := range r.Client.Drift(ctx, withoutPlaceholders(objs), r.Namespace) {
		if d.DryRun {
			rep.DryRuns++
		}
		if d.Err != nil {
			rep.Unchecked = append(rep.Unchecked, d.Err.Error())
			continue
		}
		rep.Lines = append(rep.Lines, d.Lines()...)
	}
	sort.Strings(rep.Lines)
	return rep, nil
}
