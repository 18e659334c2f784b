package manifests

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
)

// mpiOperatorFile is deploy/v2beta1/mpi-operator.yaml of the v0.8.2 module
// in the Go module cache.
func mpiOperatorFile(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	dir, err := binaries.ModuleDir(context.Background(), "github.com/kubeflow/mpi-operator", MPIOperatorVersion)
	if err != nil {
		t.Fatal(err)
	}
	data, err := Load(context.Background(), Source{Path: filepath.Join(dir, "deploy", "v2beta1", "mpi-operator.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func TestParse(t *testing.T) {
	objs, err := Parse([]byte(`# a comment
---
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: x}
data: {n: "1"}
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ServiceAccount, metadata: {name: b}}
- {apiVersion: v1, kind: ServiceAccount, metadata: {name: c}}
`))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.GetKind()+"/"+o.GetName())
	}
	if got := strings.Join(names, ","); got != "ConfigMap/a,ServiceAccount/b,ServiceAccount/c" {
		t.Errorf("objects %s", got)
	}
	for _, bad := range []struct{ doc, want string }{
		{"", "no objects"},
		{"---\n# nothing\n", "no objects"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", "no metadata.name"},
		{"apiVersion: v1\nkind: [\n", "document 1"},
		{"metadata: {name: a}\n", "document 1"},
	} {
		if _, err := Parse([]byte(bad.doc)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", bad.doc, err, bad.want)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(context.Background(), Source{Path: filepath.Join(t.TempDir(), "nope.yaml")})
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("Load of a missing file: %v", err)
	}
	if _, err := Load(context.Background(), Source{}); err == nil {
		t.Error("Load of an empty source did not fail")
	}
}

func TestSourceString(t *testing.T) {
	for _, s := range []Source{{Path: "/a/b.yaml"}, {URL: MPIOperatorURL("v0.8.2")}} {
		if got := ParseSource(SourceString(s)); got != s {
			t.Errorf("ParseSource(SourceString(%v)) = %v", s, got)
		}
	}
	if got := ParseSource("bogus"); got != (Source{}) {
		t.Errorf("ParseSource(bogus) = %v", got)
	}
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func TestRenderMPIOperatorAsShipped(t *testing.T) {
	objs := mpiOperatorFile(t)
	out, err := RenderMPIOperator(objs, "v0.8.2", MPIOperatorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range out.Objects {
		kinds = append(kinds, o.GetKind()+"/"+o.GetName())
	}
	// What v0.8.2's file holds; a change here means the renderer's
	// assumptions need checking.
	want := "Namespace/mpi-operator,CustomResourceDefinition/mpijobs.kubeflow.org,ServiceAccount/mpi-operator," +
		"ClusterRole/kubeflow-mpijobs-admin,ClusterRole/kubeflow-mpijobs-edit,ClusterRole/kubeflow-mpijobs-view," +
		"ClusterRole/mpi-operator,ClusterRoleBinding/mpi-operator,Deployment/mpi-operator"
	if got := strings.Join(kinds, ","); got != want {
		t.Errorf("objects\n %s\nwant\n %s", got, want)
	}
	if out.Image != "mpioperator/mpi-operator:0.8.2" || out.FileImage != out.Image {
		t.Errorf("image %q (file %q)", out.Image, out.FileImage)
	}
	if _, err := RenderMPIOperator(objs, "0.8.2", MPIOperatorOptions{}); err != nil {
		t.Errorf("version without the v: %v", err)
	}
}

func TestRenderMPIOperatorNamespaceAndImage(t *testing.T) {
	objs := mpiOperatorFile(t)
	out, err := RenderMPIOperator(objs, "v0.8.2", MPIOperatorOptions{Namespace: "mpi", Image: "registry.local/mpioperator/mpi-operator:0.8.2"})
	if err != nil {
		t.Fatal(err)
	}
	if find(out.Objects, "Namespace", "mpi") == nil || find(out.Objects, "Namespace", "mpi-operator") != nil {
		t.Error("the Namespace object was not renamed")
	}
	if sa := find(out.Objects, "ServiceAccount", "mpi-operator"); sa.GetNamespace() != "mpi" {
		t.Errorf("ServiceAccount in %q", sa.GetNamespace())
	}
	crb := find(out.Objects, "ClusterRoleBinding", "mpi-operator")
	subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
	if ns := subjects[0].(map[string]any)["namespace"]; ns != "mpi" {
		t.Errorf("ClusterRoleBinding subject in %v", ns)
	}
	dep := find(out.Objects, "Deployment", "mpi-operator")
	if dep.GetNamespace() != "mpi" {
		t.Errorf("Deployment in %q", dep.GetNamespace())
	}
	cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	c := cs[0].(map[string]any)
	if c["image"] != "registry.local/mpioperator/mpi-operator:0.8.2" || out.Image != c["image"] {
		t.Errorf("image %v, rendered %q", c["image"], out.Image)
	}
	if args := c["args"].([]any); len(args) != 2 || args[1] != "--lock-namespace=mpi" {
		t.Errorf("args %v", args)
	}
	// The input is not changed.
	if d := find(objs, "Deployment", "mpi-operator"); d.GetNamespace() != "mpi-operator" {
		t.Error("RenderMPIOperator changed its input")
	}
	// The CRD and ClusterRoles are the same objects.
	if crd := find(out.Objects, "CustomResourceDefinition", MPIOperatorCRD); crd == nil || crd.GetNamespace() != "" {
		t.Error("the CRD was lost or namespaced")
	}
}

func TestRenderMPIOperatorRefuses(t *testing.T) {
	objs := mpiOperatorFile(t)
	if _, err := RenderMPIOperator(objs, "v0.7.0", MPIOperatorOptions{}); err == nil ||
		!strings.Contains(err.Error(), "mpioperator/mpi-operator:0.8.2") || !strings.Contains(err.Error(), `version = "v0.8.2"`) {
		t.Errorf("a v0.8.2 file as v0.7.0: %v", err)
	}
	var noDeployment []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			noDeployment = append(noDeployment, o)
		}
	}
	if _, err := RenderMPIOperator(noDeployment, "v0.8.2", MPIOperatorOptions{}); err == nil || !strings.Contains(err.Error(), "no Deployment") {
		t.Errorf("a file without the Deployment: %v", err)
	}
	other, err := Parse([]byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: mpi-operator, namespace: x}
spec: {template: {spec: {containers: [{name: app, image: "nginx:1.27"}]}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RenderMPIOperator(other, "v0.8.2", MPIOperatorOptions{}); err == nil || !strings.Contains(err.Error(), "no container running the MPI Operator") {
		t.Errorf("another Deployment: %v", err)
	}
}

func TestImageTag(t *testing.T) {
	for img, want := range map[string]string{
		"mpioperator/mpi-operator:0.8.2":             "0.8.2",
		"localhost:5000/mpioperator/mpi-operator":    "latest",
		"localhost:5000/mpioperator/mpi-operator:v1": "v1",
		"mpioperator/mpi-operator@sha256:abc":        "sha256:abc",
		"docker.io/kubeflow/mpi-operator:0.3.0":      "0.3.0",
	} {
		if got := imageTag(img); got != want {
			t.Errorf("imageTag(%q) = %q, want %q", img, got, want)
		}
	}
}

func TestMPIOperatorImage(t *testing.T) {
	for img, want := range map[string]bool{
		"mpioperator/mpi-operator:0.8.2": true, "docker.io/mpioperator/mpi-operator:0.8.2": true,
		"kubeflow/mpi-operator:latest": true, "mpioperator/mpi-pi:openmpi": false, "kubeflow/training-operator:v1": false,
	} {
		if got := MPIOperatorImage.MatchString(img); got != want {
			t.Errorf("%q: %v", img, got)
		}
	}
}
