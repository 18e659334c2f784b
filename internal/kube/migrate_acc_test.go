package kube_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

const widgetGroup = "migration.aiplatform.test"

var (
	crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgetsV1   = schema.GroupVersionResource{Group: widgetGroup, Version: "v1", Resource: "widgets"}
)

// widgetCRD serves Widgets at v1alpha1 and v1 (the same schema, no
// conversion webhook), storing them at storage.
func widgetCRD(storage string, versions ...string) *unstructured.Unstructured {
	var vs []any
	for _, v := range versions {
		vs = append(vs, map[string]any{"name": v, "served": true, "storage": v == storage,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
				"spec": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets." + widgetGroup},
		"spec": map[string]any{"group": widgetGroup, "scope": "Namespaced",
			"names":    map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": vs},
	}}
}

// storedAPIVersion is the apiVersion of an object as etcd holds it: what
// the API server wrote, read past it.
func storedAPIVersion(t *testing.T, env *testenv.Env, ns, name string) string {
	t.Helper()
	key := base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("/registry/%s/widgets/%s/%s", widgetGroup, ns, name)))
	resp, err := http.Post(env.EtcdURL()+"/v3/kv/range", "application/json", bytes.NewBufferString(`{"key":"`+key+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		KVs []struct{ Value string } `json:"kvs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.KVs) != 1 {
		t.Fatalf("etcd has no %s/%s (%v)", ns, name, err)
	}
	raw, err := base64.StdEncoding.DecodeString(out.KVs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	var obj struct{ APIVersion string }
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatalf("%s/%s as stored: %v\n%s", ns, name, err, raw)
	}
	return obj.APIVersion
}

// Objects stored at an old version are rewritten at the storage version,
// page by page, and status.storedVersions is trimmed (issue #29): judged by
// what etcd holds and by the API server, which refuses to drop a version
// still in storedVersions and accepts it after. A second run writes nothing
// (no resourceVersion moves) and the objects' managedFields are untouched.
func TestAccMigrateStorage(t *testing.T) {
	c, env := accClient(t)
	if env.EtcdURL() == "" {
		t.Skip("an external cluster (TESTENV_KUBECONFIG): its etcd cannot be read")
	}
	defer kube.SetMigratePage(2)()
	ctx := context.Background()
	crds := env.Dynamic.Resource(crdResource)
	name := "widgets." + widgetGroup
	if _, err := crds.Create(ctx, widgetCRD("v1alpha1", "v1alpha1", "v1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = crds.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	widgets := env.Dynamic.Resource(widgetsV1)
	objs := []struct{ ns, name string }{{"default", "w0"}, {"default", "w1"}, {"default", "w2"}, {"kube-public", "w3"}, {"kube-public", "w4"}}
	for _, o := range objs {
		w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": widgetGroup + "/v1alpha1", "kind": "Widget",
			"metadata": map[string]any{"name": o.name, "namespace": o.ns}, "spec": map[string]any{"size": 3}}}
		created := false
		for deadline := time.Now().Add(30 * time.Second); !created; {
			_, err := env.Dynamic.Resource(widgetsV1.GroupResource().WithVersion("v1alpha1")).Namespace(o.ns).Create(ctx, w, metav1.CreateOptions{})
			switch {
			case err == nil:
				created = true
			case time.Now().After(deadline):
				t.Fatalf("creating widget %s/%s: %v", o.ns, o.name, err)
			default:
				time.Sleep(200 * time.Millisecond) // the CRD is not established yet
			}
		}
		if got := storedAPIVersion(t, env, o.ns, o.name); got != widgetGroup+"/v1alpha1" {
			t.Fatalf("%s/%s is stored at %s before the storage version changes", o.ns, o.name, got)
		}
	}
	// The CRD moves its storage version to v1, as an upgrade does: the
	// objects stay stored at v1alpha1 until written again.
	setVersions(t, env, "v1", "v1alpha1", "v1")
	states, missing, err := c.StorageStates(ctx, widgetGroup, nil)
	if err != nil || len(missing) > 0 || len(states) != 1 {
		t.Fatalf("StorageStates: %v %v %v", states, missing, err)
	}
	n, err := c.CountObjects(ctx, states[0])
	if s := states[0]; err != nil || !s.Pending() || s.Storage != "v1" || n != len(objs) || s.Kind != "Widget" || !reflect.DeepEqual(s.Stored, []string{"v1alpha1", "v1"}) {
		t.Fatalf("before the migration: %+v with %d objects (%v), want pending, storage v1, %d Widgets, stored [v1alpha1 v1]", s, n, err, len(objs))
	}
	// While v1alpha1 is in storedVersions the API server refuses to drop it.
	if err := trySetVersions(env, "v1", "v1"); err == nil || !strings.Contains(err.Error(), "storedVersions") {
		t.Fatalf("dropping v1alpha1 before the migration: %v, want a refusal naming storedVersions", err)
	}
	before, err := widgets.Namespace("default").Get(ctx, "w0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	var pages []int
	st, n, err := c.MigrateStorage(ctx, name, func(done int) { pages = append(pages, done) })
	if err != nil {
		t.Fatal(err)
	}
	if n != len(objs) || !reflect.DeepEqual(pages, []int{2, 4, 5}) || st.Storage != "v1" {
		t.Errorf("migration rewrote %d (pages %v, state %+v), want %d in pages of 2", n, pages, st, len(objs))
	}
	for _, o := range objs {
		if got := storedAPIVersion(t, env, o.ns, o.name); got != widgetGroup+"/v1" {
			t.Errorf("%s/%s is stored at %s after the migration, want v1", o.ns, o.name, got)
		}
	}
	states, _, _ = c.StorageStates(ctx, widgetGroup, []string{name})
	if len(states) != 1 || states[0].Pending() || !reflect.DeepEqual(states[0].Stored, []string{"v1"}) {
		t.Fatalf("after the migration: %+v, want stored [v1]", states)
	}
	after, err := widgets.Namespace("default").Get(ctx, "w0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before.GetManagedFields(), after.GetManagedFields()) || !reflect.DeepEqual(before.Object["spec"], after.Object["spec"]) {
		t.Errorf("the rewrite changed the object:\nbefore %v %v\nafter  %v %v", before.GetManagedFields(), before.Object["spec"], after.GetManagedFields(), after.Object["spec"])
	}

	// Again: every object is sent, none is written.
	if _, n, err = c.MigrateStorage(ctx, name, nil); err != nil || n != len(objs) {
		t.Fatalf("second migration: %d, %v", n, err)
	}
	again, _ := widgets.Namespace("default").Get(ctx, "w0", metav1.GetOptions{})
	if again.GetResourceVersion() != after.GetResourceVersion() {
		t.Errorf("a second migration wrote w0 again (resourceVersion %s → %s)", after.GetResourceVersion(), again.GetResourceVersion())
	}

	// v1alpha1 can go now; every object reads at v1.
	setVersions(t, env, "v1", "v1")
	list, err := widgets.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != len(objs) {
		t.Fatalf("Widgets at v1 after v1alpha1 was dropped: %v, %v", list, err)
	}
}

func setVersions(t *testing.T, env *testenv.Env, storage string, versions ...string) {
	t.Helper()
	if err := trySetVersions(env, storage, versions...); err != nil {
		t.Fatal(err)
	}
}

// trySetVersions replaces the Widget CRD's versions.
func trySetVersions(env *testenv.Env, storage string, versions ...string) error {
	ctx := context.Background()
	crds := env.Dynamic.Resource(crdResource)
	live, err := crds.Get(ctx, "widgets."+widgetGroup, metav1.GetOptions{})
	if err != nil {
		return err
	}
	live.Object["spec"].(map[string]any)["versions"] = widgetCRD(storage, versions...).Object["spec"].(map[string]any)["versions"]
	_, err = crds.Update(ctx, live, metav1.UpdateOptions{})
	return err
}
