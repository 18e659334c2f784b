package kube_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// fromYAML parses a manifest as Helm's release does (numbers as float64).
func fromYAML(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

const chartDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: NAME
  namespace: default
  labels: {app.kubernetes.io/name: manager}
spec:
  replicas: 1
  selector: {matchLabels: {app: NAME}}
  template:
    metadata: {labels: {app: NAME}}
    spec:
      tolerations: [{key: gpu, operator: Exists}]
      containers:
      - name: manager
        image: registry.example/manager:v1
        args: [--zap-log-level=2]
        ports: [{containerPort: 9443, name: webhook, protocol: TCP}]
        resources: {}
`

const chartCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.insync.example
spec:
  group: insync.example
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, default: 3}
`

// The local drift comparison (inSync) may only ever say "no drift" where
// the dry run says so too: for each way a chart's object is changed in a
// real cluster, the provider's drift check and the dry run alone agree, and
// the local comparison answers on its own exactly for the unchanged object
// and for changes an apply would leave alone.
func TestAccDriftLocalAgreesWithDryRun(t *testing.T) {
	c, _ := accClient(t)
	ctx := context.Background()
	dyn, err := c.Dynamic()
	if err != nil {
		t.Fatal(err)
	}
	// create is Helm's install: a POST under the provider's field manager.
	create := func(doc, name string) *unstructured.Unstructured {
		desired := fromYAML(t, strings.ReplaceAll(doc, "NAME", name))
		ri, _, err := c.ObjectClient(desired.DeepCopy(), "default")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ri.Create(ctx, desired.DeepCopy(), metav1.CreateOptions{FieldManager: kube.FieldManager}); err != nil {
			t.Fatal(err)
		}
		return desired
	}
	deployments := dyn.Resource(deploymentKind.GVR()).Namespace("default")
	patch := func(name, manager string, pt types.PatchType, body string) {
		t.Helper()
		if _, err := deployments.Patch(ctx, name, pt, []byte(body), metav1.PatchOptions{FieldManager: manager}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name      string
		doc       string
		change    func(name string)
		wantLocal bool     // the local comparison decides alone
		wantPaths []string // the drift both find
	}{
		{name: "untouched", doc: chartDeployment, wantLocal: true},
		{name: "crd-untouched", doc: chartCRD, wantLocal: true},
		{name: "replicas-edited", doc: chartDeployment, change: func(n string) {
			patch(n, "kubectl-edit", types.MergePatchType, `{"spec":{"replicas":3}}`)
		}, wantPaths: []string{"spec.replicas"}},
		{name: "label-added", doc: chartDeployment, change: func(n string) {
			patch(n, "kubectl-label", types.MergePatchType, `{"metadata":{"labels":{"team":"a"}}}`)
		}, wantLocal: true},
		// tolerations is an atomic list: someone else's element field is
		// dropped by an apply of the chart's list, though every value the
		// chart sets is still there.
		{name: "atomic-list-extended", doc: chartDeployment, change: func(n string) {
			patch(n, "kubectl-edit", types.MergePatchType,
				`{"spec":{"template":{"spec":{"tolerations":[{"key":"gpu","operator":"Exists","effect":"NoSchedule"}]}}}}`)
		}, wantPaths: []string{"spec.template.spec.tolerations[0].effect"}},
		// The provider put the object back once by apply, with an
		// annotation the chart no longer has: an apply removes it.
		{name: "own-applied-field-dropped", doc: chartDeployment, change: func(n string) {
			patch(n, kube.FieldManager, types.ApplyPatchType,
				`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"`+n+`","annotations":{"old":"x"}}}`)
		}, wantPaths: []string{"metadata.annotations"}},
		{name: "container-arg-edited", doc: chartDeployment, change: func(n string) {
			patch(n, "kubectl-edit", types.JSONPatchType, `[{"op":"replace","path":"/spec/template/spec/containers/0/args/0","value":"--zap-log-level=5"}]`)
		}, wantPaths: []string{"spec.template.spec.containers[0].args[0]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "insync-" + tc.name
			desired := create(tc.doc, name)
			if tc.change != nil {
				tc.change(name)
			}
			byDryRun, local := c.DriftByDryRun(ctx, desired, "default")
			got := c.Drift(ctx, []*unstructured.Unstructured{desired}, "default")[0]
			if byDryRun.Err != nil || got.Err != nil {
				t.Fatalf("drift: %v / %v", byDryRun.Err, got.Err)
			}
			dry, both := paths(byDryRun.Changes), paths(got.Changes)
			if !slices.Equal(dry, both) {
				t.Errorf("the provider's drift %v differs from the dry run's %v", both, dry)
			}
			if !slices.Equal(dry, tc.wantPaths) && !(len(dry) == 0 && len(tc.wantPaths) == 0) {
				t.Errorf("dry run found %v, want %v", dry, tc.wantPaths)
			}
			if local != tc.wantLocal {
				t.Errorf("local comparison in sync = %v, want %v (dry run found %v)", local, tc.wantLocal, dry)
			}
			if local && len(dry) > 0 {
				t.Errorf("the local comparison said in sync where the dry run found %v", dry)
			}
		})
	}
}
