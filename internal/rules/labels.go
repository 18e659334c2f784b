package rules

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/planned"
)

// FormatLabels renders a label set as {k=v, …}, sorted.
func FormatLabels(m map[string]string) string {
	if len(m) == 0 {
		return "{}"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// selectorMisses lists how selector fails to match labels.
func selectorMisses(selector, labels map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(selector)) {
		v, ok := labels[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("the pods have no label %s", k))
		case v != selector[k]:
			out = append(out, fmt.Sprintf("%s is %q on the pods, %q in the selector", k, v, selector[k]))
		}
	}
	return out
}

// merged is a ∪ b (b wins).
func merged(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}

// largest returns the most allocatable of resource on one node, and that node.
func largest(nodes []*corev1.Node, resource string) (int64, string) {
	most, name := int64(0), ""
	for _, n := range nodes {
		q := n.Status.Allocatable[corev1.ResourceName(resource)]
		if a := q.Value(); a > most || name == "" {
			most, name = a, n.Name
		}
	}
	return most, name
}

// poolRefs names pools for involves, and in a sentence.
func poolRefs(pools []planned.NodePool) ([]string, string) {
	var refs, names []string
	for _, p := range pools {
		refs = append(refs, ref(p))
		names = append(names, describe(p))
	}
	if len(names) == 0 {
		return nil, ""
	}
	return refs, " (labelled by " + strings.Join(names, ", ") + " in this plan)"
}
