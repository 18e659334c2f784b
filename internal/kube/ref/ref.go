// Package ref is the name of one Kubernetes object and its import ID,
// without any dependency: the parser of user input that `make fuzz` fuzzes
// on every run, in a package small enough to build instrumented in seconds
// (in internal/kube, beside client-go, the instrumented build alone took
// four minutes of every CI run). internal/kube re-exports it as kube.Ref.
package ref

import (
	"fmt"
	"strings"
)

// Ref names one object: Namespace is empty for a cluster-scoped one.
type Ref struct {
	Namespace string
	Name      string
}

// String is the import ID: "namespace/name", or "name".
func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// Parse reads an import ID: "namespace/name" for a namespaced kind, the
// object's name for a cluster-scoped one.
func Parse(id string, namespaced bool) (Ref, error) {
	parts := strings.Split(id, "/")
	switch {
	case namespaced && len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return Ref{Namespace: parts[0], Name: parts[1]}, nil
	case !namespaced && len(parts) == 1 && parts[0] != "":
		return Ref{Name: parts[0]}, nil
	case namespaced:
		return Ref{}, fmt.Errorf("import ID %q: expected \"namespace/name\"", id)
	default:
		return Ref{}, fmt.Errorf("import ID %q: expected the object's name (this kind is cluster-scoped, no namespace)", id)
	}
}
