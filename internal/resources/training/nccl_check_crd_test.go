package training

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"fmt"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// MPIOperatorVersion is the MPI Operator release whose MPIJob CRD the
// rendered object is checked against (read from the Go module cache).
const MPIOperatorVersion = "v0.8.0"

// The rendered MPIJob passes the v0.8.0 CRD's schema as the API server
// applies it: no field is pruned (an unknown field would be dropped
// silently, e.g. a policy the operator then never sees) and every value the
// schema enumerates is one of its values (mpiImplementation; v0.8.0's schema
// has no enum for cleanPodPolicy or launcherCreationPolicy).
func TestMPIJobFitsTheCRD(t *testing.T) {
	dir, err := testenv.ModuleDir(context.Background(), "github.com/kubeflow/mpi-operator", MPIOperatorVersion)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "manifests", "base", "kubeflow.org_mpijobs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	var props *apiextensionsv1.JSONSchemaProps
	for _, v := range crd.Spec.Versions {
		if v.Name == MPIJobKind.Version && v.Served && v.Schema != nil {
			props = v.Schema.OpenAPIV3Schema
		}
	}
	if props == nil || crd.Spec.Group != MPIJobKind.Group || crd.Spec.Names.Plural != MPIJobKind.Resource {
		t.Fatalf("the CRD does not serve %s/%s %s", MPIJobKind.Group, MPIJobKind.Version, MPIJobKind.Resource)
	}
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(props, &internal, nil); err != nil {
		t.Fatal(err)
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		t.Fatal(err)
	}

	for name, s := range map[string]*spec{"defaults": testSpec(), "options": func() *spec {
		s := testSpec()
		s.Queue, s.HostNetwork, s.RDMA = "training", true, map[string]int64{"rdma/ib": 1}
		return s
	}()} {
		obj := mpiJob(s).Object
		if pruned := pruning.PruneWithOptions(obj, structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}); len(pruned) > 0 {
			t.Errorf("%s: the API server would drop %v", name, pruned)
		}
		for _, e := range enumErrors(obj, structural, "") {
			t.Errorf("%s: the API server would refuse it: %s", name, e)
		}
	}
}

// enumErrors lists the values of obj outside their schema's enum.
func enumErrors(obj any, s *structuralschema.Structural, at string) []string {
	if s == nil {
		return nil
	}
	var out []string
	switch v := obj.(type) {
	case map[string]any:
		for k, x := range v {
			if p, ok := s.Properties[k]; ok {
				out = append(out, enumErrors(x, &p, at+"."+k)...)
			} else if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
				out = append(out, enumErrors(x, s.AdditionalProperties.Structural, at+"."+k)...)
			}
		}
	case []any:
		for i, x := range v {
			out = append(out, enumErrors(x, s.Items, fmt.Sprintf("%s[%d]", at, i))...)
		}
	default:
		if s.ValueValidation == nil || len(s.ValueValidation.Enum) == 0 {
			return nil
		}
		var values []any
		for _, e := range s.ValueValidation.Enum {
			if fmt.Sprint(e.Object) == fmt.Sprint(v) {
				return nil
			}
			values = append(values, e.Object)
		}
		allowed, _ := json.Marshal(values)
		out = append(out, fmt.Sprintf("%s = %v is not one of %s", at, v, allowed))
	}
	return out
}
