package rules

import (
	"slices"
	"testing"
)

// The selector check names each label that misses, in key order.
func TestSelectorMisses(t *testing.T) {
	got := selectorMisses(map[string]string{"app": "vllm", "tier": "serving", "model": "llama"}, map[string]string{"app": "sglang", "tier": "serving"})
	want := []string{`app is "sglang" on the pods, "vllm" in the selector`, "the pods have no label model"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := selectorMisses(map[string]string{"app": "vllm"}, map[string]string{"app": "vllm", "extra": "x"}); got != nil {
		t.Errorf("a subset matches: got %q", got)
	}
}
