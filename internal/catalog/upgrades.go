package catalog

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Upgrades are what upstream says of moving a product from one version to
// another: versions an upgrade must pass through, API versions a version
// stops serving or starts storing, and changes users of the previous
// version see. Plan reads them for a planned version change (issue #29).
type Upgrades struct {
	// Group is the API group of the product's CRDs, whose live
	// status.storedVersions the API rules read.
	Group   string
	Through []Gate
	// Unserves: from Since on, Version is no longer served; objects
	// stored at it must be rewritten before.
	Unserves []APIVersionAt
	// Stores: from Since on, objects are stored at Version, which older
	// versions do not read.
	Stores  []APIVersionAt
	Changes []Change
}

// Gate is a version an upgrade from below it must stop at before going
// past its minor version.
type Gate struct{ Version, Why string }

// APIVersionAt is an API version of Group and the product version from
// which a rule holds.
type APIVersionAt struct{ Since, Version, Ref string }

// Change is what users of versions before Since see change.
type Change struct{ Since, What string }

// UpgradePlan is what Plan finds: Notes for the plan to show, and Refusal
// (empty: none) naming the safe path.
type UpgradePlan struct {
	Notes   []string
	Refusal string
}

// Plan is an upgrade (or downgrade) of product from → to. stored is
// status.storedVersions of each live CRD of u.Group, by CRD name (empty when
// none is installed; nil when they could not be read, which a note says).
// Versions that do not parse are not judged.
func (u Upgrades) Plan(product, from, to string, stored map[string][]string) UpgradePlan {
	var p UpgradePlan
	f, err1 := semver.NewVersion(strings.TrimPrefix(from, "v"))
	t, err2 := semver.NewVersion(strings.TrimPrefix(to, "v"))
	if err1 != nil || err2 != nil || f.Equal(t) {
		return p
	}
	at := func(v string) *semver.Version { return semver.MustParse(v) }
	if t.GreaterThan(f) {
		for _, g := range u.Through {
			gv := at(g.Version)
			if f.LessThan(gv) && (t.Major() > gv.Major() || t.Minor() > gv.Minor()) {
				p.Refusal = fmt.Sprintf("%s cannot be upgraded from %s to %s directly: every upgrade from below %s must stop there first (%s). "+
					"The safe path: set version = %q, apply, then set version = %q.", product, from, to, g.Version, g.Why, g.Version, to)
				return p
			}
		}
		for _, a := range u.Unserves {
			if !f.LessThan(at(a.Since)) || t.LessThan(at(a.Since)) {
				continue
			}
			if stored == nil {
				p.Notes = append(p.Notes, fmt.Sprintf("%s %s stops serving %s/%s; whether objects are still stored at it was not checked.", product, a.Since, u.Group, a.Version))
				continue
			}
			if names := storedAt(stored, a.Version); len(names) > 0 {
				p.Refusal = fmt.Sprintf("%s %s stops serving %s/%s, and objects may still be stored at it: the status.storedVersions of %s list it. "+
					"Every object of those CRDs must be rewritten at the storage version and %s removed from status.storedVersions before "+
					"the upgrade (%s). The safe path: stay below %s, add resource \"aiplatform_storage_version_migration\" with group = %q "+
					"and apply it (it rewrites every object and removes %s from each CRD's status.storedVersions), then upgrade.",
					product, a.Since, u.Group, a.Version, strings.Join(names, ", "), a.Version, a.Ref, a.Since, u.Group, a.Version)
				return p
			}
			p.Notes = append(p.Notes, fmt.Sprintf("%s %s stops serving %s/%s (no CRD of this cluster stores objects at it).", product, a.Since, u.Group, a.Version))
		}
		for _, c := range u.Changes {
			if s := at(c.Since); f.LessThan(s) && !t.LessThan(s) {
				p.Notes = append(p.Notes, fmt.Sprintf("%s %s: %s", product, c.Since, c.What))
			}
		}
		return p
	}
	for _, a := range u.Stores {
		if s := at(a.Since); !f.LessThan(s) && t.LessThan(s) {
			p.Refusal = fmt.Sprintf("%s cannot be downgraded from %s to %s: %s stores objects at %s/%s since %s, which %s does not read. "+
				"Downgrades across an API version are not supported upstream; keep version %s or later.", product, from, to, product,
				u.Group, a.Version, a.Since, to, a.Since)
			return p
		}
	}
	for _, c := range u.Changes {
		if s := at(c.Since); t.LessThan(s) && !f.LessThan(s) {
			p.Notes = append(p.Notes, fmt.Sprintf("downgrading below %s %s undoes: %s", product, c.Since, c.What))
		}
	}
	return p
}

// storedAt is the names of the CRDs whose stored versions include version.
func storedAt(stored map[string][]string, version string) []string {
	var names []string
	for name, versions := range stored {
		if slices.Contains(versions, version) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// KueueUpgrades: v1beta2 is stored since 0.16 and 0.20 stops serving
// v1beta1; 0.19 turns WaitForPodsReady on (apis/config/v1beta2/defaults.go
// of the module: 0.19 defaults cfg.WaitForPodsReady with a 30-minute
// timeout, 0.17 leaves it nil).
var KueueUpgrades = Upgrades{
	Group:    KueueGroup,
	Unserves: []APIVersionAt{{Since: "0.20.0", Version: "v1beta1", Ref: "kubernetes-sigs/kueue#13957"}},
	Stores:   []APIVersionAt{{Since: "0.16.0", Version: "v1beta2"}},
	Changes: []Change{
		{Since: "0.19.0", What: "WaitForPodsReady is on by default (timeout 30m): a workload whose pods are not all ready within " +
			"30 minutes is evicted and requeued. wait_for_pods_ready = { enable = false } keeps the previous behaviour."},
		{Since: "0.19.0", What: "KubeRay sidecars count against quota (a RayJob's submitter, an autoscaling RayCluster's autoscaler): " +
			"cluster queues sized to the pods alone may stop admitting them."},
		{Since: "0.19.0", What: "a LeaderWorkerSet's group size is immutable while Kueue manages it, and the queue-name label can " +
			"no longer be removed from a running Ray job."},
	},
}

// TrainerUpgrades: 2.3 moves the CRDs into the chart's templates and
// removes the runtimes' finalizers; later versions assume both, so every
// upgrade passes through 2.3.
var TrainerUpgrades = Upgrades{
	Group: TrainerGroup,
	Through: []Gate{{Version: "2.3.0", Why: "2.3 moves the CRDs into the chart's templates and removes the training runtimes' " +
		"finalizers, and later versions assume both"}},
	Changes: []Change{{Since: "2.3.0", What: "the CRDs move from the chart's crds/ into its templates, so Helm upgrades them from " +
		"now on, and the training runtimes lose their finalizers."}},
}

// LWSUpgrades: 0.9 adds the DisaggregatedSet CRD (config/crd/bases of the
// module).
var LWSUpgrades = Upgrades{
	Group:   "leaderworkerset.x-k8s.io",
	Changes: []Change{{Since: "0.9.0", What: "adds the DisaggregatedSet CRD (disaggregatedset.x-k8s.io)."}},
}
