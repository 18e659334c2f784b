package manifests

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
)

// The MPI Operator (github.com/kubeflow/mpi-operator) ships, per release, one
// file deploy/v2beta1/mpi-operator.yaml: the Namespace mpi-operator, the
// CRD mpijobs.kubeflow.org, a ServiceAccount, four ClusterRoles and a
// ClusterRoleBinding, and the Deployment mpi-operator whose container runs
// `-alsologtostderr --lock-namespace=mpi-operator`. The namespace is a
// choice of the file, not of the operator: the ClusterRoleBinding names the
// ServiceAccount in it and the leader-election lock lives in it
// (--lock-namespace), so a rendering for another namespace rewrites those
// three places. The cluster-scoped names (the CRD, the ClusterRoles and the
// ClusterRoleBinding) are fixed, so one cluster holds one MPI Operator.
var (
	MPIOperatorVersion   = catalog.MPIOperator.DefaultVersion
	MPIOperatorNamespace = catalog.MPIOperator.Namespace
)

const (
	// MPIOperatorName is the Deployment's and its container's name, and
	// the name of the Set.
	MPIOperatorName = "mpi-operator"
	// MPIOperatorCRD is the MPIJob CRD.
	MPIOperatorCRD = "mpijobs.kubeflow.org"
)

// MPIOperatorURL is where a release's file is published.
func MPIOperatorURL(version string) string {
	return "https://raw.githubusercontent.com/kubeflow/mpi-operator/" + version + "/" + catalog.MPIOperatorManifest
}

// MPIOperatorImage matches the operator's images (mpioperator/mpi-operator,
// earlier kubeflow/mpi-operator), with a registry or not.
var MPIOperatorImage = regexp.MustCompile(`(^|/)(mpioperator|kubeflow)/mpi-operator[:@]`)

// MPIOperatorOptions change the file's objects.
type MPIOperatorOptions struct {
	Namespace string // default: the file's (mpi-operator)
	Image     string // default: the file's
}

// Rendered is a file rendered for an install.
type Rendered struct {
	Objects []*unstructured.Unstructured
	Image   string // the operator image the objects deploy
	// FileImage is the image the file itself names.
	FileImage string
}

// RenderMPIOperator checks that objs are the MPI Operator's manifests of
// version (the Deployment's image tag is the version without its "v") and
// renders them for o. The error says what is wrong with the file.
func RenderMPIOperator(objs []*unstructured.Unstructured, version string, o MPIOperatorOptions) (Rendered, error) {
	var out Rendered
	var dep *unstructured.Unstructured
	for _, obj := range objs {
		if obj.GetKind() == "Deployment" && obj.GetName() == MPIOperatorName {
			dep = obj
		}
	}
	if dep == nil {
		return out, fmt.Errorf("the file has no Deployment %q: it is not the MPI Operator's deploy/v2beta1/mpi-operator.yaml", MPIOperatorName)
	}
	fileNS := dep.GetNamespace()
	if fileNS == "" {
		return out, fmt.Errorf("the file's Deployment %q has no namespace", MPIOperatorName)
	}
	c, idx, err := operatorContainer(dep)
	if err != nil {
		return out, err
	}
	out.FileImage, _ = c["image"].(string)
	if !MPIOperatorImage.MatchString(out.FileImage) {
		return out, fmt.Errorf("the file's Deployment %q runs image %q, not the MPI Operator's (mpioperator/mpi-operator)", MPIOperatorName, out.FileImage)
	}
	if tag := imageTag(out.FileImage); strings.TrimPrefix(tag, "v") != strings.TrimPrefix(version, "v") {
		return out, fmt.Errorf("the file deploys %s, which is not version %s (the image tag is the release's version): set version = %q or use the file of %s",
			out.FileImage, version, "v"+strings.TrimPrefix(tag, "v"), version)
	}
	ns := o.Namespace
	if ns == "" {
		ns = fileNS
	}
	for _, obj := range objs {
		obj = obj.DeepCopy()
		if ns != fileNS {
			renamespace(obj, fileNS, ns)
		}
		if obj.GetKind() == "Deployment" && obj.GetName() == MPIOperatorName && o.Image != "" {
			cs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
			cs[idx].(map[string]any)["image"] = o.Image
			_ = unstructured.SetNestedSlice(obj.Object, cs, "spec", "template", "spec", "containers")
		}
		out.Objects = append(out.Objects, obj)
	}
	out.Image = out.FileImage
	if o.Image != "" {
		out.Image = o.Image
	}
	return out, nil
}

// operatorContainer is the Deployment's container that runs the operator
// (named mpi-operator, else the one with its image).
func operatorContainer(dep *unstructured.Unstructured) (map[string]any, int, error) {
	cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	found := -1
	for i, c := range cs {
		m, _ := c.(map[string]any)
		if m["name"] == MPIOperatorName {
			return m, i, nil
		}
		if img, _ := m["image"].(string); found < 0 && MPIOperatorImage.MatchString(img) {
			found = i
		}
	}
	if found < 0 {
		return nil, 0, fmt.Errorf("the file's Deployment %q has no container running the MPI Operator", MPIOperatorName)
	}
	return cs[found].(map[string]any), found, nil
}

func imageTag(image string) string {
	if i := strings.LastIndex(image, "@"); i >= 0 {
		return image[i+1:]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[i+1:]
	}
	return "latest"
}

// renamespace moves obj from namespace from to namespace to: the Namespace
// object itself, metadata.namespace, the subjects of role bindings and the
// operator's --lock-namespace flag.
func renamespace(obj *unstructured.Unstructured, from, to string) {
	switch {
	case obj.GetKind() == "Namespace" && obj.GetName() == from:
		obj.SetName(to)
	case obj.GetNamespace() == from:
		obj.SetNamespace(to)
	}
	if k := obj.GetKind(); k == "ClusterRoleBinding" || k == "RoleBinding" {
		subjects, _, _ := unstructured.NestedSlice(obj.Object, "subjects")
		for _, s := range subjects {
			if m, ok := s.(map[string]any); ok && m["namespace"] == from {
				m["namespace"] = to
			}
		}
		if subjects != nil {
			_ = unstructured.SetNestedSlice(obj.Object, subjects, "subjects")
		}
	}
	if obj.GetKind() != "Deployment" {
		return
	}
	cs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	for _, c := range cs {
		m, _ := c.(map[string]any)
		args, _ := m["args"].([]any)
		for i, a := range args {
			s, _ := a.(string)
			name, value, hasValue := strings.Cut(strings.TrimLeft(s, "-"), "=")
			switch {
			case name != "lock-namespace" || !strings.HasPrefix(s, "-"):
			case hasValue && value == from:
				args[i] = s[:len(s)-len(value)] + to
			case !hasValue && i+1 < len(args) && args[i+1] == from:
				args[i+1] = to
			}
		}
	}
	if cs != nil {
		_ = unstructured.SetNestedSlice(obj.Object, cs, "spec", "template", "spec", "containers")
	}
}
