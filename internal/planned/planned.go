// Package planned is the per-run plan registry: what each resource of one
// provider run has planned so far, so that a check across resources sees the
// configuration being planned and not only the live cluster.
//
// Terraform plans every resource of one provider configuration in one
// provider process, in dependency order where an attribute reference or
// depends_on makes an edge, and in any order (and concurrently) otherwise.
// Each resource records its fact here before it runs the checks that judge
// it (internal/rules), and each check reads the facts of the other resources
// first and the live cluster second. Of two resources with no edge between
// them, whichever is planned second therefore sees the first: a rule judged
// from both sides catches a conflict in either order. The side planned first
// cannot know whether the other is still to come, so a rule says so in a
// warning that names the reference that would order the two.
//
// The facts are plain values (no framework types, no I/O): internal/rules
// reads them, the resources write them.
package planned

import (
	"reflect"
	"sort"
	"sync"
)

// A Fact is what one resource plans, as the rules need it. Its key is
// unique among the facts of its type (a kind's "namespace/name").
type Fact interface {
	FactKey() string
}

// A Run is what one provider run has planned.
type Run struct {
	mu    sync.Mutex
	facts map[reflect.Type]map[string]any
}

// runs maps a run's key (the configured client: one per provider
// configuration and process) to its Run.
var runs sync.Map

// Of returns the run of key, the configured client of the provider, which
// is the same for every resource of one provider configuration in one
// process. A nil key (a provider not configured yet) has a run of its own
// that nothing else reads.
func Of(key any) *Run {
	if key == nil {
		return &Run{facts: map[reflect.Type]map[string]any{}}
	}
	v, _ := runs.LoadOrStore(key, &Run{facts: map[reflect.Type]map[string]any{}})
	return v.(*Run)
}

// Record records f as planned in r, replacing an earlier plan of the same
// fact (Terraform plans a resource again during apply).
func Record[T Fact](r *Run, f T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := reflect.TypeFor[T]()
	m := r.facts[t]
	if m == nil {
		m = map[string]any{}
		r.facts[t] = m
	}
	m[f.FactKey()] = f
}

// All returns the recorded facts of type T, sorted by key.
func All[T Fact](r *Run) []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.facts[reflect.TypeFor[T]()]
	out := make([]T, 0, len(m))
	for _, v := range m {
		out = append(out, v.(T))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FactKey() < out[j].FactKey() })
	return out
}

// Lookup returns the recorded fact of type T with key.
func Lookup[T Fact](r *Run, key string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.facts[reflect.TypeFor[T]()][key]
	if !ok {
		var zero T
		return zero, false
	}
	return v.(T), true
}

// Others returns the recorded facts of type T other than the one keyed self.
func Others[T Fact](r *Run, self string) []T {
	all := All[T](r)
	out := all[:0]
	for _, f := range all {
		if f.FactKey() != self {
			out = append(out, f)
		}
	}
	return out
}
