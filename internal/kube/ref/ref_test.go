package ref

import "testing"

// Any ID that parses round-trips through String, and is namespaced exactly
// when asked for. (make fuzz runs it; go test runs the seeds.)
func FuzzParse(f *testing.F) {
	for _, s := range []string{"a", "a/b", "/", "a//b", ""} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, id string, namespaced bool) {
		ref, err := Parse(id, namespaced)
		if err != nil {
			return
		}
		if ref.String() != id {
			t.Fatalf("round trip: %q → %+v → %q", id, ref, ref.String())
		}
		if namespaced != (ref.Namespace != "") || ref.Name == "" {
			t.Fatalf("%q (namespaced=%v) parsed as %+v", id, namespaced, ref)
		}
	})
}
