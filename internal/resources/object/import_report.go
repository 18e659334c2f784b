package object

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// An import tells the truth: when a Spec has ImportReport, importing an
// object warns with what it carries beyond the typed attributes — the
// fields the generated configuration carries in a pod_template overlay,
// and the fields the configuration cannot express at all (the object's own
// labels, a multi-node worker spec, …), which an apply leaves to the
// manager that set them.

// warnImport reads the imported object into a fresh model and warns with
// its report. A missing object, or one that cannot be read, is left to the
// read that follows the import, which reports it.
func (r *Resource[T, P]) warnImport(ctx context.Context, ref kube.Ref, resp *resource.ImportStateResponse) {
	if r.spec.ImportReport == nil || r.client == nil {
		return
	}
	live, found, err := r.client.Get(ctx, r.spec.Kind, ref)
	if err != nil || !found {
		return
	}
	var m T
	r.spec.Read(live.Object, &m)
	carried, lost := r.spec.ImportReport(live.Object, &m)
	if len(carried) == 0 && len(lost) == 0 {
		return
	}
	sort.Strings(carried)
	sort.Strings(lost)
	carrier := r.spec.ImportCarrier
	if carrier == "" {
		carrier = "pod_template"
	}
	var b strings.Builder
	if len(carried) > 0 {
		fmt.Fprintf(&b, "No typed attribute expresses these fields; the imported %s carries them, so the generated configuration reproduces them:\n  %s\n",
			carrier, strings.Join(carried, "\n  "))
	}
	if len(lost) > 0 {
		fmt.Fprintf(&b, "The configuration cannot express these fields; an apply leaves them as they are, to the manager that set them:\n  %s\n",
			strings.Join(lost, "\n  "))
	}
	resp.Diagnostics.AddWarning(fmt.Sprintf("Imported %s %s carries fields beyond the typed attributes", r.spec.Kind.Kind, ref), b.String())
}

// Uncovered lists the paths of the leaves of live that written does not
// set, skipping the subtrees skip names (pod templates, which an import
// carries whole): what an ImportReport calls lost.
func Uncovered(live, written any, skip func(path string) bool) []string {
	return uncovered(live, written, "", skip)
}

func uncovered(live, written any, at string, skip func(string) bool) []string {
	l, ok := live.(map[string]any)
	if !ok {
		return nil
	}
	w, _ := written.(map[string]any)
	var out []string
	for k, v := range l {
		p := FieldPath(at, k)
		if skip != nil && skip(p) {
			continue
		}
		wv, has := w[k]
		if sub, isMap := v.(map[string]any); isMap && len(sub) > 0 {
			out = append(out, uncovered(v, wv, p, skip)...)
			continue
		}
		if !has {
			out = append(out, p)
		}
	}
	return out
}

// FieldPath is the path of key k under at, as an import report names it:
// a.b.c, or a["x.io/y"] for a key with dots or slashes (labels).
func FieldPath(at, k string) string {
	if strings.ContainsAny(k, "./") {
		return fmt.Sprintf("%s[%q]", at, k)
	}
	if at == "" {
		return k
	}
	return at + "." + k
}

// Settable is the part of an object a configuration could set: its labels
// and annotations and its spec.
func Settable(live map[string]any) map[string]any {
	meta := map[string]any{}
	for _, k := range []string{"labels", "annotations"} {
		if v := Fields(live, "metadata", k); len(v) > 0 {
			meta[k] = v
		}
	}
	return map[string]any{"metadata": meta, "spec": live["spec"]}
}
