package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Drift of objects someone else created (a Helm chart's): each desired object
// is compared with the live one locally (inSync), and only one that may
// differ is server-side applied in dry-run mode, with force and the
// provider's field manager, and the result compared with the live object.
// What the server defaults, what controllers add and what other managers own
// but the desired object does not set are the same on both sides, so only
// fields the desired object sets and the live object disagrees on remain.

// Change is one field whose live value differs from the desired one.
type Change struct {
	Path string // e.g. spec.replicas, data["config.yaml"].integrations.frameworks
	Live string // the live value, "(absent)" when unset
	Want string // what applying the desired object makes it
}

// ObjectDrift is how one live object differs from its desired state.
type ObjectDrift struct {
	Object  string // Kind/namespace/name
	Missing bool   // the object does not exist (or its kind is no longer served)
	Changes []Change
	// Err is set when the object could not be checked (the dry run failed);
	// it is not drift.
	Err error
	// DryRun says the object needed the server's dry run (it may differ);
	// false when the local comparison found it in sync.
	DryRun bool
}

// Drifted says whether applying the desired object would change the cluster.
func (d ObjectDrift) Drifted() bool { return d.Err == nil && (d.Missing || len(d.Changes) > 0) }

// Lines renders the drift as "Kind/ns/name: path live → want", one per change.
func (d ObjectDrift) Lines() []string {
	switch {
	case d.Err != nil:
		return nil
	case d.Missing:
		return []string{d.Object + ": deleted from the cluster"}
	}
	out := make([]string, 0, len(d.Changes))
	for _, c := range d.Changes {
		out = append(out, fmt.Sprintf("%s: %s %s → %s", d.Object, c.Path, c.Live, c.Want))
	}
	return out
}

// driftWorkers bounds concurrent checks (each a GET, and a dry-run PATCH
// for an object that may differ).
const driftWorkers = 8

// Drift compares every desired object with the live one. Objects without a
// namespace of namespaced kinds are taken to be in defaultNamespace. The
// result has one entry per desired object, in the same order.
func (c *Client) Drift(ctx context.Context, desired []*unstructured.Unstructured, defaultNamespace string) []ObjectDrift {
	out := make([]ObjectDrift, len(desired))
	forEach(len(desired), driftWorkers, func(i int) {
		out[i] = c.objectDrift(ctx, desired[i].DeepCopy(), defaultNamespace, true)
	})
	return out
}

// objectDrift is one object's drift; local lets inSync answer "no drift"
// without the dry run.
func (c *Client) objectDrift(ctx context.Context, obj *unstructured.Unstructured, defaultNamespace string, local bool) ObjectDrift {
	ri, _, err := c.ObjectClient(obj, defaultNamespace)
	d := ObjectDrift{Object: ObjectName(obj)}
	if err != nil {
		if isNoMatch(err) {
			d.Missing = true // the kind itself is gone (CRD deleted)
			return d
		}
		d.Err = err
		return d
	}
	live, found, err := c.readLive(ctx, obj, ri)
	if err != nil {
		d.Err = err
		return d
	}
	if !found {
		d.Missing = true
		return d
	}
	unstructured.RemoveNestedField(obj.Object, "status")
	if local && inSync(obj, live) {
		return d // what a dry run would show: nothing (see inSync)
	}
	d.DryRun = true
	applied, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{
		FieldManager: FieldManager, Force: true, DryRun: []string{metav1.DryRunAll},
	})
	if err != nil {
		d.Err = fmt.Errorf("dry-run apply of %s: %w", d.Object, err)
		return d
	}
	d.Changes = Compare(live.Object, applied.Object, obj.GetKind() == "ConfigMap")
	return d
}

// ApplyObjects server-side applies the objects with force, taking over the
// fields they set from whoever changed them. Used to put back what drifted.
func (c *Client) ApplyObjects(ctx context.Context, objs []*unstructured.Unstructured, defaultNamespace string) error {
	errs := make([]error, len(objs))
	forEach(len(objs), driftWorkers, func(i int) {
		obj := objs[i].DeepCopy()
		ri, _, err := c.ObjectClient(obj, defaultNamespace)
		if err == nil {
			unstructured.RemoveNestedField(obj.Object, "status")
			_, err = ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		}
		if err != nil {
			errs[i] = fmt.Errorf("applying %s: %w", ObjectName(obj), err)
		}
	})
	var msgs []string
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%s", strings.Join(msgs, "\n"))
	}
	return nil
}

func forEach(n, workers int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

func isNoMatch(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "no matches for kind") || strings.Contains(err.Error(), "could not find the requested resource"))
}

// ignoredMetadata are bookkeeping fields the server sets on every write.
var ignoredMetadata = []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "selfLink"}

// Compare lists the fields where want differs from live, ignoring status
// and the server's bookkeeping in metadata. With parseStrings, string values
// under data that hold YAML or JSON documents (a ConfigMap's configuration
// file) are compared parsed, so formatting and key order do not count and
// the change names the field inside the document.
func Compare(live, want map[string]any, parseStrings bool) []Change {
	l, w := normalize(live), normalize(want)
	var out []Change
	diff("", l, w, parseStrings, &out)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func normalize(obj map[string]any) map[string]any {
	o := runtimeCopy(obj)
	delete(o, "status")
	if m, ok := o["metadata"].(map[string]any); ok {
		for _, k := range ignoredMetadata {
			delete(m, k)
		}
	}
	return o
}

func runtimeCopy(obj map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: obj}).DeepCopy().Object
}

const absent = "(absent)"

func diff(path string, live, want any, parseStrings bool, out *[]Change) {
	if reflect.DeepEqual(live, want) {
		return
	}
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			break
		}
		keys := map[string]bool{}
		for k := range l {
			keys[k] = true
		}
		for k := range w {
			keys[k] = true
		}
		for k := range keys {
			lv, lok := l[k]
			wv, wok := w[k]
			p := join(path, k)
			switch {
			case !lok:
				*out = append(*out, Change{Path: p, Live: absent, Want: show(wv)})
			case !wok:
				*out = append(*out, Change{Path: p, Live: show(lv), Want: absent})
			default:
				diff(p, lv, wv, parseStrings && (path != "" || k == "data" || k == "binaryData" || k == "stringData"), out)
			}
		}
		return
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(w) {
			break
		}
		for i := range w {
			diff(fmt.Sprintf("%s[%d]", path, i), l[i], w[i], parseStrings, out)
		}
		return
	case string:
		if l, ok := live.(string); ok && parseStrings {
			lp, lok := parseDocument(l)
			wp, wok := parseDocument(w)
			if lok && wok {
				if reflect.DeepEqual(lp, wp) {
					return
				}
				diff(path, lp, wp, false, out)
				return
			}
		}
	}
	*out = append(*out, Change{Path: orRoot(path), Live: show(live), Want: show(want)})
}

// parseDocument parses a YAML (or JSON) document that is a map or a list.
func parseDocument(s string) (any, bool) {
	if !strings.ContainsAny(s, ":\n[{") {
		return nil, false
	}
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		return nil, false
	}
	switch v.(type) {
	case map[string]any, []any:
		return v, true
	}
	return nil, false
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

func join(path, key string) string {
	if !plainKey.MatchString(key) {
		return fmt.Sprintf("%s[%q]", path, key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(p string) string {
	if p == "" {
		return "(object)"
	}
	return p
}

// show prints a value compactly: scalars as they are, strings quoted only
// when they need it, maps and lists as JSON, all cut at 100 characters.
func show(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		s = "null"
	case string:
		s = x
		if x == "" || strings.ContainsAny(x, " \n\t\"") {
			s = fmt.Sprintf("%q", x)
		}
	case map[string]any, []any:
		b, _ := json.Marshal(x)
		s = string(b)
	default:
		s = fmt.Sprint(x)
	}
	if r := []rune(s); len(r) > 100 {
		s = string(r[:99]) + "…"
	}
	return s
}
