package kube

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// What an apply would do to a live object, before it is done: the object the
// apply would send is server-side applied in dry-run mode and the result
// compared with the live object (the technique of Drift). A plan uses it to
// show — and refuse — changes to fields beyond the resource's own
// attributes, such as the volumes of an atomic list taken over by force.

// Conflict is one field another field manager owns that an apply would take.
type Conflict struct {
	// Field in the API server's notation, e.g. .spec.replicas or
	// .spec.template.spec.containers[name="nginx"].image.
	Field string
	// Manager is the other field manager, e.g. kubectl-client-side-apply.
	Manager string
	// Message is the server's text, e.g. conflict with "kubectl" using apps/v1.
	Message string
}

// Conflicts lists the fields of an apply conflict error (HTTP 409 from a
// server-side apply) and who owns them, sorted by field; nil for any other
// error.
func Conflicts(err error) []Conflict {
	var status apierrors.APIStatus
	if err == nil || !apierrors.IsConflict(err) || !asAPIStatus(err, &status) || status.Status().Details == nil {
		return nil
	}
	var out []Conflict
	for _, c := range status.Status().Details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		out = append(out, Conflict{Field: c.Field, Manager: quotedManager(c.Message), Message: c.Message})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

var firstQuoted = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)

// quotedManager takes the manager's name out of `conflict with "name" …`.
func quotedManager(msg string) string {
	if m := firstQuoted.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return msg
}

// Preview is what applying one object would change in the cluster.
type Preview struct {
	Object string // Kind/namespace/name
	// Missing: the object does not exist, so the apply creates it and
	// nothing live is lost.
	Missing bool
	// Conflicts are the fields another manager owns that the apply sets; a
	// non-forced apply fails on them. When there are any, Changes are those
	// of the forced apply (what force_conflicts would do).
	Conflicts []Conflict
	// Changes are every field whose live value the apply would change, add
	// or remove, with lists of named elements compared by name: a path such
	// as spec.template.spec.volumes["name=ray-logs"] names the element.
	Changes []Change
	// Unmanaged are the Changes that add, change or remove a live value
	// outside the paths the resource manages (see PreviewApply): what a plan
	// of the resource's attributes alone would not show.
	Unmanaged []Change
}

// Forced says whether Changes are those of a forced apply.
func (p Preview) Forced() bool { return len(p.Conflicts) > 0 }

// PreviewApply dry-runs the server-side apply of obj (at k's version, with
// the provider's field manager; forced when force is set) and compares the
// result with the live object. managed are path patterns of the fields the
// resource's attributes show in a plan, in the notation of Change.Path:
// "spec.replicas", "metadata.labels", "spec.template.spec.containers[*].image"
// — [*] (or *) stands for any one index or key. A change is managed when a
// pattern covers its path (the pattern is the path or above it), or when it
// adds or removes a value as a whole (a list element, a map) and a pattern
// lies below its path: the resource writes, or wrote, fields of that element,
// so its attributes show it appear or go. A resource whose Read maps back
// everything its Fields write passes LeafPaths of the planned object and of
// the prior state's object.
//
// When a non-forced apply would fail on conflicts, the preview lists them and
// its changes are the forced apply's. Any other failure of the dry run is
// returned as an error.
func (c *Client) PreviewApply(ctx context.Context, k Kind, obj *unstructured.Unstructured, force bool, managed []string) (Preview, error) {
	obj = obj.DeepCopy()
	unstructured.RemoveNestedField(obj.Object, "status")
	ref := Ref{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	p := Preview{Object: ObjectName(obj)}
	live, found, err := c.Get(ctx, k, ref)
	if err != nil {
		return p, err
	}
	if !found {
		p.Missing = true
		return p, nil
	}
	applied, err := c.dryRunApply(ctx, k, obj, force)
	if conflicts := Conflicts(err); !force && conflicts != nil {
		p.Conflicts = conflicts
		applied, err = c.dryRunApply(ctx, k, obj, true)
	}
	if err != nil {
		return p, err
	}
	l, a := keyLists(normalize(live.Object), normalize(applied.Object), "")
	p.Changes = Compare(l.(map[string]any), a.(map[string]any), k.Kind == "ConfigMap")
	patterns := make([][]string, len(managed))
	for i, m := range managed {
		patterns[i] = pathSegments(m)
	}
	for _, ch := range p.Changes {
		if !managedChange(ch, patterns) {
			p.Unmanaged = append(p.Unmanaged, ch)
		}
	}
	return p, nil
}

// dryRunApply is ApplyForce in dry-run mode, returning the object at k's
// version as the server would store it.
func (c *Client) dryRunApply(ctx context.Context, k Kind, obj *unstructured.Unstructured, force bool) (*unstructured.Unstructured, error) {
	out, kv, err := c.serverApply(ctx, k, obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: force, DryRun: []string{metav1.DryRunAll}})
	if apierrors.IsConflict(err) {
		return nil, err // kept raw: Conflicts reads its causes
	}
	if err != nil {
		return nil, c.explain(ctx, err, "dry-run apply", kv, Ref{Namespace: obj.GetNamespace(), Name: obj.GetName()})
	}
	return out, nil
}

// Lines renders the unmanaged changes as "path: live → want", one per change.
func (p Preview) Lines() []string {
	out := make([]string, 0, len(p.Unmanaged))
	for _, ch := range p.Unmanaged {
		out = append(out, fmt.Sprintf("%s: %s → %s", ch.Path, ch.Live, ch.Want))
	}
	return out
}

// ConflictText says which fields a forced apply would take from whom and
// every change it would make to the live object — the taken fields' new
// values and, marked, whatever the resource's own changes do not show — for
// an error or a warning that would otherwise only suggest force_conflicts.
func (p Preview) ConflictText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: fields owned by another field manager:\n", p.Object)
	for _, c := range p.Conflicts {
		fmt.Fprintf(&b, "  %s (%s)\n", strings.TrimPrefix(c.Field, "."), c.Message)
	}
	unmanaged := map[string]bool{}
	for _, ch := range p.Unmanaged {
		unmanaged[ch.Path] = true
	}
	var lines []string
	for _, ch := range p.Changes {
		if !unmanaged[ch.Path] {
			lines = append(lines, fmt.Sprintf("  %s: %s → %s", ch.Path, ch.Live, ch.Want))
		}
	}
	for _, l := range p.Lines() {
		lines = append(lines, "  "+l+"   (not among the changes the resource shows)")
	}
	if len(lines) == 0 {
		b.WriteString("Taking them with force_conflicts = true changes nothing in the live object.")
		return b.String()
	}
	b.WriteString("Taking them with force_conflicts = true would change the live object:\n")
	b.WriteString(strings.Join(lines, "\n"))
	return b.String()
}

// listKeys name the elements of a list by the list's field: the merge keys
// of the pod spec's lists and of the operators' group lists. Any other list
// whose elements all have distinct names is keyed by "name".
var listKeys = map[string]string{
	"volumeMounts": "mountPath", "volumeDevices": "devicePath", "ports": "containerPort",
	"workerGroupSpecs": "groupName", "hostAliases": "ip",
}

// keyLists rewrites, in both trees at once, every list whose elements all
// carry its naming field (see listKeys) with distinct values on both sides
// into a map from "field=value" to element, so that Compare reports an
// added or removed element by name rather than a changed list length or
// shifted indices. b may be nil (only a is rewritten).
func keyLists(a, b any, field string) (any, any) {
	switch x := a.(type) {
	case map[string]any:
		y, _ := b.(map[string]any)
		if b != nil && y == nil {
			return x, b
		}
		oa, ob := map[string]any{}, map[string]any{}
		for k, v := range x {
			oa[k] = v
		}
		for k, v := range y {
			ob[k] = v
		}
		for k := range oa {
			if _, ok := ob[k]; ok {
				oa[k], ob[k] = keyLists(oa[k], ob[k], k)
			} else {
				oa[k], _ = keyLists(oa[k], nil, k)
			}
		}
		for k := range ob {
			if _, ok := oa[k]; !ok {
				ob[k], _ = keyLists(ob[k], nil, k)
			}
		}
		if b == nil {
			return oa, nil
		}
		return oa, ob
	case []any:
		y, isList := b.([]any)
		if b != nil && !isList {
			return x, b
		}
		key := listKey(field, x, y)
		if key == "" {
			return x, b
		}
		ma, mb := byKey(x, key), byKey(y, key)
		if b == nil {
			ra, _ := keyLists(ma, nil, "")
			return ra, nil
		}
		return keyLists(ma, mb, "")
	case nil:
		if b != nil {
			rb, _ := keyLists(b, nil, field)
			return nil, rb
		}
	}
	return a, b
}

func listKey(field string, lists ...[]any) string {
	k, ok := listKeys[field]
	if !ok {
		k = "name"
	}
	if len(lists[0]) == 0 && (len(lists) < 2 || len(lists[1]) == 0) {
		return ""
	}
	for _, l := range lists {
		seen := map[string]bool{}
		for _, it := range l {
			m, isMap := it.(map[string]any)
			v, has := m[k]
			s := fmt.Sprint(v)
			if !isMap || !has || isComposite(v) || seen[s] {
				return ""
			}
			seen[s] = true
		}
	}
	return k
}

// LeafPaths lists the paths of every value obj sets, in the notation of
// Change.Path (named list elements as ["name=x"], other lists whole): the
// managed paths of a resource whose attributes read back everything it
// writes. metadata.name and metadata.namespace are left out.
func LeafPaths(obj map[string]any) []string {
	k, _ := keyLists(obj, nil, "")
	var out []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			for key, e := range m {
				walk(join(path, key), e)
			}
			return
		}
		if path != "metadata.name" && path != "metadata.namespace" {
			out = append(out, path)
		}
	}
	walk("", k)
	sort.Strings(out)
	return out
}

// ChangedPaths lists the paths, in Change.Path's notation, where object to
// differs from object from: given the object a resource's prior state
// writes and the one its plan writes, the fields its plan shows changing —
// the managed paths to give PreviewApply so that it reports every other
// change, including a field the resource writes but reads back imperfectly
// (a request taken for a limit), as one the plan does not show.
func ChangedPaths(from, to map[string]any) []string {
	a, b := keyLists(normalize(from), normalize(to), "")
	changes := Compare(a.(map[string]any), b.(map[string]any), false)
	out := make([]string, len(changes))
	for i, ch := range changes {
		out[i] = ch.Path
	}
	return out
}

// Covered says whether path (a Change.Path) is at or under one of the
// managed patterns (see PreviewApply).
func Covered(path string, managed []string) bool {
	patterns := make([][]string, len(managed))
	for i, m := range managed {
		patterns[i] = pathSegments(m)
	}
	return covered(pathSegments(path), patterns)
}

// managedChange applies PreviewApply's rule to one change.
func managedChange(ch Change, patterns [][]string) bool {
	path := pathSegments(ch.Path)
	if covered(path, patterns) {
		return true
	}
	if ch.Live != absent && ch.Want != absent {
		return false
	}
	for _, pat := range patterns {
		if len(pat) <= len(path) {
			continue
		}
		below := true
		for i, s := range path {
			if pat[i] != "*" && pat[i] != s {
				below = false
				break
			}
		}
		if below {
			return true
		}
	}
	return false
}

func isComposite(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

func byKey(l []any, key string) map[string]any {
	out := make(map[string]any, len(l))
	for _, it := range l {
		m := it.(map[string]any)
		out[fmt.Sprintf("%s=%v", key, m[key])] = m
	}
	return out
}

// pathSegments splits a path in Change.Path's notation into its steps:
// "a.b[0][\"x.y\"]" → a, b, 0, x.y; "[*]" and "*" become "*".
func pathSegments(p string) []string {
	var out []string
	for i := 0; i < len(p); {
		switch p[i] {
		case '.':
			i++
		case '[':
			j := i + 1
			if j < len(p) && p[j] == '"' {
				// a quoted key: read to the closing quote, honouring escapes
				var sb strings.Builder
				j++
				for j < len(p) && p[j] != '"' {
					if p[j] == '\\' && j+1 < len(p) {
						j++
					}
					sb.WriteByte(p[j])
					j++
				}
				out = append(out, sb.String())
				i = j + 1
				if i < len(p) && p[i] == ']' {
					i++
				}
				continue
			}
			end := strings.IndexByte(p[j:], ']')
			if end < 0 {
				out = append(out, p[j:])
				return out
			}
			out = append(out, p[j:j+end])
			i = j + end + 1
		default:
			j := i
			for j < len(p) && p[j] != '.' && p[j] != '[' {
				j++
			}
			out = append(out, p[i:j])
			i = j
		}
	}
	return out
}

// covered says whether some pattern is a prefix of path, step by step.
func covered(path []string, patterns [][]string) bool {
	for _, pat := range patterns {
		if len(pat) > len(path) || len(pat) == 0 {
			continue
		}
		match := true
		for i, s := range pat {
			if s != "*" && s != path[i] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}
