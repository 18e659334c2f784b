package planned

import (
	"sync"
	"testing"
)

// A re-plan replaces the earlier fact; All sorts by key; Others leaves out self.
func TestRecordAllLookup(t *testing.T) {
	r := Of(new(int))
	Record(r, LocalQueue{Namespace: "b", Name: "q", ClusterQueue: "one"})
	Record(r, LocalQueue{Namespace: "a", Name: "q", ClusterQueue: "two"})
	Record(r, LocalQueue{Namespace: "b", Name: "q", ClusterQueue: "three"})
	all := All[LocalQueue](r)
	if len(all) != 2 || all[0].Namespace != "a" || all[1].ClusterQueue != "three" {
		t.Fatalf("All: %+v", all)
	}
	if q, ok := Lookup[LocalQueue](r, "b/q"); !ok || q.ClusterQueue != "three" {
		t.Fatalf("Lookup: %+v %v", q, ok)
	}
	if _, ok := Lookup[ClusterQueue](r, "b/q"); ok {
		t.Fatal("a key found under another type")
	}
	if others := Others[LocalQueue](r, "a/q"); len(others) != 1 || others[0].Namespace != "b" {
		t.Fatalf("Others: %+v", others)
	}
}

// Runs are per key: one provider configuration's plan is not another's.
func TestRunsAreApart(t *testing.T) {
	a, b := new(int), new(int)
	Record(Of(a), ResourceFlavor{Name: "f"})
	if len(All[ResourceFlavor](Of(b))) != 0 || len(All[ResourceFlavor](Of(a))) != 1 {
		t.Fatal("runs share facts")
	}
	if Of(nil) == Of(nil) {
		t.Fatal("an unconfigured provider's runs are shared")
	}
}

// Two resources with no edge between them, planned concurrently, each
// recording before it checks: at least one of them sees the other, so a
// rule judged from both sides never misses a conflict.
func TestConcurrentPlansSeeEachOther(t *testing.T) {
	for i := 0; i < 2000; i++ {
		r := Of(new(int))
		var wg sync.WaitGroup
		var sawQueue, sawRuntime bool
		wg.Add(2)
		go func() {
			defer wg.Done()
			Record(r, TrainingRuntime{Kind: "TrainingRuntime", Namespace: "ns", Name: "rt", Queue: "q"})
			_, sawQueue = Lookup[LocalQueue](r, "ns/q")
		}()
		go func() {
			defer wg.Done()
			Record(r, LocalQueue{Namespace: "ns", Name: "q", ClusterQueue: "cq"})
			sawRuntime = len(All[TrainingRuntime](r)) == 1
		}()
		wg.Wait()
		if !sawQueue && !sawRuntime {
			t.Fatalf("run %d: neither plan saw the other", i)
		}
	}
}
