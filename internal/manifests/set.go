package manifests

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// Set is the objects of one manifest file installed together, in Namespace
// (the namespace of its namespaced objects and of its record), named Name
// (e.g. "mpi-operator"). Every write is a server-side apply with force and
// the provider's field manager: an install takes over objects someone
// applied with kubectl before, and a re-apply puts back what drifted.
type Set struct {
	Client    *kube.Client
	Namespace string
	Name      string
	Log       func(msg string) // progress, shown at INFO
}

// ID is the Set's "namespace/name".
func (s *Set) ID() string { return s.Namespace + "/" + s.Name }

func (s *Set) log(format string, args ...any) {
	if s.Log != nil {
		s.Log(fmt.Sprintf(format, args...))
	}
}

// setLocks serialises operations on one Set within the provider.
var setLocks sync.Map // host + namespace/name → *sync.Mutex

func (s *Set) lock() func() {
	v, _ := setLocks.LoadOrStore(s.Client.Host()+" "+s.ID(), &sync.Mutex{})
	m := v.(*sync.Mutex)
	m.Lock()
	return m.Unlock
}

// phase orders objects for apply: Namespaces, then CRDs, then the rest.
func phase(o *unstructured.Unstructured) int {
	switch o.GetKind() {
	case "Namespace":
		return 0
	case "CustomResourceDefinition":
		return 1
	}
	return 2
}

func ofPhase(objs []*unstructured.Unstructured, p int) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if phase(o) == p {
			out = append(out, o)
		}
	}
	return out
}

// Install applies rec's objects (Namespaces, then CRDs, waiting until they
// are Established, then the rest), records them, and waits until every
// object is ready (kube.Client.WaitReady: Deployments available, CRDs
// Established) and every webhook answers (kube.Client.WaitWebhooks). Any failure removes what was installed (CRDs stay) and says
// why, as Helm's atomic install does.
func (s *Set) Install(ctx context.Context, rec Record, timeout time.Duration) error {
	defer s.lock()()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ns, found, err := s.Client.Get(ctx, kube.Kind{Version: "v1", Resource: "namespaces", Kind: "Namespace"}, kube.Ref{Name: s.Namespace})
	if err != nil {
		return err
	}
	rec.NamespaceExisted = found && ns != nil
	start := time.Now()
	s.log("installing %s %s (%d objects from %s)", s.Name, rec.Version, len(rec.Objects), rec.Source)
	if err := s.apply(ctx, rec); err != nil {
		return s.failInstall(rec, err)
	}
	s.log("%s: %d objects applied in %s; waiting until they are ready", s.ID(), len(rec.Objects), time.Since(start).Round(100*time.Millisecond))
	if err := s.waitReady(ctx, rec, timeout); err != nil {
		return s.failInstall(rec, err)
	}
	return nil
}

// waitReady waits until rec's objects are ready, then until each of its
// webhooks answers a request through it (kube.Client.WaitWebhooks).
func (s *Set) waitReady(ctx context.Context, rec Record, timeout time.Duration) error {
	if err := s.Client.WaitReady(ctx, rec.Objects, s.Namespace, s.Log); err != nil {
		return fmt.Errorf("waiting for readiness (timeout %s): %w", timeout, err)
	}
	if err := s.Client.WaitWebhooks(ctx, rec.Objects, s.Namespace, false, s.Log); err != nil {
		return fmt.Errorf("waiting for its webhooks to answer (timeout %s): %w", timeout, err)
	}
	return nil
}

// apply applies and records rec's objects in phases.
func (s *Set) apply(ctx context.Context, rec Record) error {
	for p := 0; p <= 2; p++ {
		objs := ofPhase(rec.Objects, p)
		if len(objs) == 0 {
			continue
		}
		if err := s.Client.ApplyObjects(ctx, objs, s.Namespace); err != nil {
			return err
		}
		if p == 0 {
			// The record lives in the namespace: write it as soon as the
			// namespace exists, so that a failure from here on can be undone
			// and a crash leaves something to import or uninstall.
			if err := s.writeRecord(ctx, rec); err != nil {
				return err
			}
		}
		if p == 1 {
			// Established before the controller starts: the MPI Operator
			// exits when its CRD is not served yet.
			if err := s.Client.WaitReady(ctx, objs, s.Namespace, s.Log); err != nil {
				return fmt.Errorf("waiting for the CRDs: %w", err)
			}
			s.Client.ResetDiscovery()
		}
	}
	if len(ofPhase(rec.Objects, 0)) == 0 {
		return s.writeRecord(ctx, rec)
	}
	return nil
}

func (s *Set) failInstall(rec Record, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := s.uninstall(ctx, &rec, false); err != nil {
		return fmt.Errorf("installing %s failed: %w\n\nRemoving what was installed failed too: %v", s.ID(), cause, err)
	}
	return fmt.Errorf("installing %s failed, and what was installed was removed (CRDs stay): %w", s.ID(), cause)
}

// Upgrade applies rec's objects over prev's, deletes the objects prev has
// and rec has not (CRDs stay), records rec and waits until every object is
// ready. A failure applies prev again and says why.
func (s *Set) Upgrade(ctx context.Context, rec, prev Record, timeout time.Duration) error {
	defer s.lock()()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rec.NamespaceExisted = prev.NamespaceExisted
	start := time.Now()
	s.log("applying %s %s (%d objects from %s) over %s", s.Name, rec.Version, len(rec.Objects), rec.Source, prev.Version)
	err := s.apply(ctx, rec)
	if err == nil {
		err = s.prune(ctx, rec, prev)
	}
	if err == nil {
		s.log("%s: %d objects applied in %s; waiting until they are ready", s.ID(), len(rec.Objects), time.Since(start).Round(100*time.Millisecond))
		err = s.waitReady(ctx, rec, timeout)
	}
	if err == nil {
		return nil
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer rcancel()
	if rerr := s.apply(rctx, prev); rerr != nil {
		return fmt.Errorf("upgrading %s failed: %w\n\nApplying the previous objects (%s) again failed too: %v", s.ID(), err, prev.Version, rerr)
	}
	return fmt.Errorf("upgrading %s failed, and the previous objects (%s from %s) were applied again: %w", s.ID(), prev.Version, prev.Source, err)
}

// prune deletes the objects of prev that rec no longer has, CRDs excepted.
func (s *Set) prune(ctx context.Context, rec, prev Record) error {
	keep := map[string]bool{}
	for _, o := range rec.Objects {
		keep[s.key(o)] = true
	}
	var gone []*unstructured.Unstructured
	for _, o := range prev.Objects {
		if !keep[s.key(o)] && phase(o) != 1 {
			gone = append(gone, o)
		}
	}
	return s.delete(ctx, gone)
}

// key names an object by group, kind, namespace and name.
func (s *Set) key(o *unstructured.Unstructured) string {
	ns := o.GetNamespace()
	if ns == "" && phase(o) == 2 {
		ns = s.Namespace // a namespaced object without one (cluster-scoped kinds compare the same on both sides)
	}
	return o.GroupVersionKind().GroupKind().String() + " " + ns + "/" + o.GetName()
}

// delete deletes the objects, Deployments first, Namespaces last, each
// waited for until it is gone.
func (s *Set) delete(ctx context.Context, objs []*unstructured.Unstructured) error {
	order := slices.Clone(objs)
	rank := func(o *unstructured.Unstructured) int {
		switch {
		case o.GetKind() == "Deployment":
			return 0
		case phase(o) == 2:
			return 1
		case phase(o) == 1:
			return 2
		case o.Object["aggregationRule"] != nil:
			return 4 // after its sources: deleting one makes the aggregation controller apply it again
		}
		return 3
	}
	sort.SliceStable(order, func(i, j int) bool { return rank(order[i]) < rank(order[j]) })
	for _, o := range order {
		o = o.DeepCopy()
		_, _, _ = s.Client.ObjectClient(o, s.Namespace) // gives a namespaced object without one the Set's
		s.log("deleting %s", kube.ObjectName(o))
		if err := s.Client.DeleteObject(ctx, o); err != nil {
			return fmt.Errorf("deleting %s: %w", kube.ObjectName(o), err)
		}
	}
	return nil
}

// Uninstall deletes the recorded objects and the record, and waits until
// they are gone. CRDs (and with them every object of their kinds) stay
// unless removeCRDs; a namespace that existed before the install stays.
func (s *Set) Uninstall(ctx context.Context, rec *Record, removeCRDs bool, timeout time.Duration) error {
	defer s.lock()()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return s.uninstall(ctx, rec, removeCRDs)
}

func (s *Set) uninstall(ctx context.Context, rec *Record, removeCRDs bool) error {
	var objs, namespaces []*unstructured.Unstructured
	for _, o := range rec.Objects {
		switch phase(o) {
		case 0:
			if o.GetName() == s.Namespace && rec.NamespaceExisted {
				s.log("keeping namespace %s: it existed before the install", o.GetName())
				continue
			}
			namespaces = append(namespaces, o)
		case 1:
			if !removeCRDs {
				s.log("keeping CRD %s (remove_crds is false)", o.GetName())
				continue
			}
			objs = append(objs, o)
		default:
			objs = append(objs, o)
		}
	}
	s.log("uninstalling %s %s", s.ID(), rec.Version)
	if err := s.delete(ctx, objs); err != nil {
		return fmt.Errorf("uninstalling %s: %w", s.ID(), err)
	}
	// A ClusterRole the aggregation controller re-created after it was
	// deleted (kubeflow-mpijobs-admin aggregates roles deleted with it) is
	// deleted again, not left behind (kube.WaitGone).
	if err := s.Client.WaitGone(ctx, objs, s.Namespace, kube.RecreatedByAggregation, func(m string) { s.log("%s", m) }); err != nil {
		return fmt.Errorf("uninstalling %s: %w", s.ID(), err)
	}
	if err := s.deleteRecord(ctx); err != nil {
		return fmt.Errorf("uninstalling %s: deleting its record: %w", s.ID(), err)
	}
	if err := s.delete(ctx, namespaces); err != nil {
		return fmt.Errorf("uninstalling %s: %w", s.ID(), err)
	}
	return nil
}

// DriftReport is how a Set differs from the cluster.
type DriftReport struct {
	// Lines are the drifted fields, "Kind/namespace/name: path live → want",
	// sorted.
	Lines []string
	// Unchecked are objects whose dry run failed (not counted as drift).
	Unchecked []string
	Objects   int // objects compared
}

// Drift compares every recorded object with the live cluster (see
// kube.Client.Drift).
func (s *Set) Drift(ctx context.Context, rec *Record) DriftReport {
	rep := DriftReport{Objects: len(rec.Objects)}
	for _, d := range s.Client.Drift(ctx, rec.Objects, s.Namespace) {
		if d.Err != nil {
			rep.Unchecked = append(rep.Unchecked, d.Err.Error())
			continue
		}
		rep.Lines = append(rep.Lines, d.Lines()...)
	}
	sort.Strings(rep.Lines)
	return rep
}

// Summary is a one-line description of a record for logs.
func (r *Record) Summary() string {
	return fmt.Sprintf("%s (%d objects from %s)", r.Version, len(r.Objects), strings.TrimPrefix(strings.TrimPrefix(r.Source, "path:"), "url:"))
}
