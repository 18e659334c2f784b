package helm

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Render renders the chart with vals as an install of release name in
// namespace would, without a cluster: the objects of its templates (through
// the same post-renderer as an install, so omit applies) and the CRDs of its
// crds/ directory.
func Render(ch *chart.Chart, vals map[string]any, namespace, name string, omit []string) ([]*unstructured.Unstructured, error) {
	in := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	in.ReleaseName, in.Namespace = name, namespace
	in.DryRun, in.ClientOnly, in.Replace = true, true, true
	in.PostRenderer = keepCRDs{omit: omit}
	rel, err := in.Run(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s %s: %w", ch.Metadata.Name, ch.Metadata.Version, err)
	}
	objs, err := Objects(rel)
	if err != nil {
		return nil, err
	}
	return append(objs, crdObjects(ch)...), nil
}

// ReleaseObjects are the objects of a release as installed: its manifest's
// and the CRDs of its chart's crds/ directory.
func ReleaseObjects(rel *release.Release) ([]*unstructured.Unstructured, error) {
	objs, err := Objects(rel)
	if err != nil {
		return nil, err
	}
	if rel.Chart != nil {
		objs = append(objs, crdObjects(rel.Chart)...)
	}
	return objs, nil
}

// Changes lists what replacing the objects before with after changes that
// users see: CRDs added, and CRDs no longer in the chart (which stay in the
// cluster); per API version of a CRD, whether it starts or stops being
// served, becomes the storage version, and which fields its schema gains or
// loses; and admission webhooks added or removed. Read from both charts, so
// it holds for versions nobody wrote release notes for.
func Changes(before, after []*unstructured.Unstructured) []string {
	var out []string
	old, next := crdsByName(before), crdsByName(after)
	for _, name := range sortedKeys(next) {
		n := next[name]
		o, found := old[name]
		if !found {
			out = append(out, fmt.Sprintf("CRD %s is added (serves %s)", name, strings.Join(served(n), ", ")))
			continue
		}
		out = append(out, crdChanges(name, o, n)...)
	}
	for _, name := range sortedKeys(old) {
		if _, found := next[name]; !found {
			out = append(out, fmt.Sprintf("CRD %s is no longer in the chart: it stays in the cluster, no longer upgraded", name))
		}
	}
	oldHooks, nextHooks := webhookNames(before), webhookNames(after)
	for _, h := range nextHooks {
		if !slices.Contains(oldHooks, h) {
			out = append(out, "admission webhook "+h+" is added")
		}
	}
	for _, h := range oldHooks {
		if !slices.Contains(nextHooks, h) {
			out = append(out, "admission webhook "+h+" is removed")
		}
	}
	return out
}

// crdVersion is one entry of a CRD's spec.versions.
type crdVersion struct {
	served, storage bool
	fields          map[string]bool
}

func crdsByName(objs []*unstructured.Unstructured) map[string]map[string]crdVersion {
	out := map[string]map[string]crdVersion{}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		versions := map[string]crdVersion{}
		list, _, _ := unstructured.NestedSlice(o.Object, "spec", "versions")
		for _, v := range list {
			v, _ := v.(map[string]any)
			name, _ := v["name"].(string)
			served, _ := v["served"].(bool)
			storage, _ := v["storage"].(bool)
			schema, _, _ := unstructured.NestedMap(v, "schema", "openAPIV3Schema")
			fields := map[string]bool{}
			schemaFields(schema, "", fields)
			versions[name] = crdVersion{served: served, storage: storage, fields: fields}
		}
		out[o.GetName()] = versions
	}
	return out
}

// schemaFields collects the dotted paths of every property of an OpenAPI
// schema ("spec.template.spec.containers[]").
func schemaFields(s map[string]any, prefix string, into map[string]bool) {
	if items, ok := s["items"].(map[string]any); ok {
		schemaFields(items, prefix+"[]", into)
	}
	props, _ := s["properties"].(map[string]any)
	for name, p := range props {
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		into[path] = true
		if p, ok := p.(map[string]any); ok {
			schemaFields(p, path, into)
		}
	}
}

func served(versions map[string]crdVersion) []string {
	var out []string
	for _, name := range sortedKeys(versions) {
		if versions[name].served {
			out = append(out, name)
		}
	}
	return out
}

func crdChanges(name string, old, next map[string]crdVersion) []string {
	var out []string
	for _, v := range sortedKeys(next) {
		n := next[v]
		o, found := old[v]
		switch {
		case n.served && (!found || !o.served):
			out = append(out, fmt.Sprintf("CRD %s starts serving %s", name, v))
		case !n.served && found && o.served:
			out = append(out, fmt.Sprintf("CRD %s stops serving %s", name, v))
		}
		if n.storage && found && !o.storage {
			out = append(out, fmt.Sprintf("CRD %s stores objects at %s (new objects and rewrites; existing ones stay at their version until rewritten)", name, v))
		}
		if found {
			if added, removed := fieldDiff(o.fields, n.fields); added != "" || removed != "" {
				out = append(out, fmt.Sprintf("CRD %s %s schema: %s", name, v, strings.Join(nonEmpty(added, removed), "; ")))
			}
		}
	}
	for _, v := range sortedKeys(old) {
		if _, found := next[v]; !found {
			out = append(out, fmt.Sprintf("CRD %s drops version %s", name, v))
		}
	}
	return out
}

// fieldDiff describes the fields added and removed, naming the shallowest
// few (a new object field brings its whole subtree: its root is named).
func fieldDiff(old, next map[string]bool) (added, removed string) {
	describe := func(verb string, in, notIn map[string]bool) string {
		var roots []string
		for f := range in {
			if notIn[f] {
				continue
			}
			if p := parentField(f); p == "" || notIn[p] {
				roots = append(roots, f)
			}
		}
		if len(roots) == 0 {
			return ""
		}
		sort.Slice(roots, func(i, j int) bool {
			if a, b := strings.Count(roots[i], "."), strings.Count(roots[j], "."); a != b {
				return a < b
			}
			return roots[i] < roots[j]
		})
		shown := roots
		if len(shown) > 3 {
			shown = shown[:3]
		}
		s := fmt.Sprintf("%d field(s) %s (%s", len(roots), verb, strings.Join(shown, ", "))
		if len(roots) > len(shown) {
			s += ", …"
		}
		return s + ")"
	}
	return describe("added", next, old), describe("removed", old, next)
}

// parentField is the path of the field that holds f, "" at the top.
func parentField(f string) string {
	f = strings.TrimSuffix(f, "[]")
	i := strings.LastIndexByte(f, '.')
	if i < 0 {
		return ""
	}
	return strings.TrimSuffix(f[:i], "[]")
}

func webhookNames(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		if k := o.GetKind(); k != "ValidatingWebhookConfiguration" && k != "MutatingWebhookConfiguration" {
			continue
		}
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for _, h := range hooks {
			if h, ok := h.(map[string]any); ok {
				if name, _ := h["name"].(string); name != "" {
					out = append(out, name)
				}
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func nonEmpty(s ...string) []string {
	return slices.DeleteFunc(s, func(x string) bool { return x == "" })
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// MovedCRDs are the CRDs that the chart before created from its crds/
// directory and the chart next renders among its templates instead (next
// rendered: Render's output). Helm created the former at install without
// its ownership label and annotations, and an upgrade refuses to take over
// an existing object without them ("invalid ownership metadata"): Kubeflow
// Trainer 2.3 moved its CRDs so. Upgrade adds them first (AdoptCRDs).
func MovedCRDs(before, next *chart.Chart, rendered []*unstructured.Unstructured) []string {
	if before == nil || next == nil {
		return nil
	}
	stays := map[string]bool{}
	for _, o := range crdObjects(next) {
		stays[o.GetName()] = true
	}
	inTemplates := map[string]bool{}
	for _, o := range rendered {
		if o.GetKind() == "CustomResourceDefinition" && !stays[o.GetName()] {
			inTemplates[o.GetName()] = true
		}
	}
	var out []string
	for _, o := range crdObjects(before) {
		if inTemplates[o.GetName()] {
			out = append(out, o.GetName())
		}
	}
	sort.Strings(out)
	return out
}

// MovedCRDNote is how the plan shows a CRD MovedCRDs found.
func MovedCRDNote(name string) string {
	return fmt.Sprintf("CRD %s moves from the chart's crds/ into its templates: the upgrade adds Helm's ownership label and "+
		"annotations to it, so that the release takes it over and upgrades it from now on", name)
}
