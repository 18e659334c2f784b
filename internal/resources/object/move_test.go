package object

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

func TestManifestRef(t *testing.T) {
	lq := kube.Kind{Group: "kueue.x-k8s.io", Kind: "LocalQueue", Namespaced: true}
	cq := kube.Kind{Group: "kueue.x-k8s.io", Kind: "ClusterQueue"}
	cases := []struct {
		name, state string
		kind        kube.Kind
		want        kube.Ref
		err         string
	}{
		{"object wrapped as state stores dynamic values", `{"manifest":null,"object":{"value":{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"LocalQueue","metadata":{"name":"a","namespace":"team"}},"type":["object",{}]}}`,
			lq, kube.Ref{Namespace: "team", Name: "a"}, ""},
		{"manifest when object is null", `{"manifest":{"value":{"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"ClusterQueue","metadata":{"name":"cq"}},"type":["object",{}]},"object":null}`,
			cq, kube.Ref{Name: "cq"}, ""},
		{"plain JSON, namespace defaulted", `{"manifest":{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"LocalQueue","metadata":{"name":"a"}}}`,
			lq, kube.Ref{Namespace: "default", Name: "a"}, ""},
		{"another kind", `{"object":{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ClusterQueue","metadata":{"name":"a"}}}`,
			lq, kube.Ref{}, "is a ClusterQueue"},
		{"another group", `{"object":{"apiVersion":"v1","kind":"LocalQueue","metadata":{"name":"a"}}}`,
			lq, kube.Ref{}, "is a LocalQueue (v1)"},
		{"no name", `{"object":{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ClusterQueue","metadata":{"generateName":"a-"}}}`,
			cq, kube.Ref{}, "no metadata.name"},
		{"neither attribute", `{"wait":[]}`, cq, kube.Ref{}, "neither"},
		{"not JSON", `flatmap`, cq, kube.Ref{}, "not a JSON object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, diags := ManifestRef(&tfprotov6.RawState{JSON: []byte(c.state)}, c.kind)
			if c.err != "" {
				if !diags.HasError() || !strings.Contains(diags[0].Detail(), c.err) {
					t.Fatalf("want an error containing %q, got %v", c.err, diags)
				}
				return
			}
			if diags.HasError() || got != c.want {
				t.Fatalf("got %v %v, want %v", got, diags, c.want)
			}
		})
	}
}

func TestFromProvider(t *testing.T) {
	for addr, want := range map[string]bool{
		"registry.terraform.io/hashicorp/kubernetes": true,
		"registry.opentofu.org/hashicorp/kubernetes": true,
		"hashicorp/kubernetes":                       true,
		"registry.terraform.io/example/kubernetes":   false,
		"registry.terraform.io/hashicorp/helm":       false,
	} {
		if FromProvider(addr, SourceKubernetes) != want {
			t.Errorf("FromProvider(%q) = %t", addr, !want)
		}
	}
}
