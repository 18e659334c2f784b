package installs

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

func TestReleaseRef(t *testing.T) {
	cases := []struct {
		name, state string
		want        kube.Ref
		err         string
	}{
		{"OCI chart, helm v2 metadata list", `{"name":"kueue","namespace":"kueue-system","chart":"oci://registry.k8s.io/kueue/charts/kueue","metadata":[{"chart":"kueue","version":"0.17.0"}]}`,
			kube.Ref{Namespace: "kueue-system", Name: "kueue"}, ""},
		{"repository chart, helm v3 metadata object", `{"name":"k","namespace":"ns","chart":"kueue","repository":"https://example.invalid","metadata":{"chart":"kueue"}}`,
			kube.Ref{Namespace: "ns", Name: "k"}, ""},
		{"local archive, no metadata", `{"name":"k","namespace":"ns","chart":"./charts/kueue-0.17.0.tgz"}`,
			kube.Ref{Namespace: "ns", Name: "k"}, ""},
		{"default namespace", `{"name":"k","chart":"kueue"}`, kube.Ref{Namespace: "default", Name: "k"}, ""},
		{"metadata wins over a local path", `{"name":"k","namespace":"ns","chart":"/tmp/x","metadata":[{"chart":"kueue"}]}`,
			kube.Ref{Namespace: "ns", Name: "k"}, ""},
		{"another chart", `{"name":"volcano","namespace":"volcano-system","chart":"volcano","metadata":[{"chart":"volcano"}]}`,
			kube.Ref{}, `installed chart "volcano"`},
		{"no name", `{"chart":"kueue"}`, kube.Ref{}, "no name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, diags := releaseRef(&tfprotov6.RawState{JSON: []byte(c.state)}, "kueue", "Kueue")
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

func TestChartFrom(t *testing.T) {
	def := helm.Kueue.Default
	cases := map[string]string{
		`{"chart":"oci://registry.k8s.io/kueue/charts/kueue"}`:                 "<nil>",
		`{"repository":"oci://registry.k8s.io/kueue/charts","chart":"kueue"}`:  "<nil>",
		`{"repository":"oci://registry.k8s.io/kueue/charts/","chart":"kueue"}`: "<nil>",
		`{"chart":"oci://mirror.example/kueue/kueue"}`:                         `"oci://mirror.example/kueue" "kueue" <null>`,
		`{"repository":"https://charts.example","chart":"kueue"}`:              `"https://charts.example" "kueue" <null>`,
		`{"chart":"./charts/kueue"}`:                                           `<null> <null> "./charts/kueue"`,
		`{"name":"x"}`:                                                         "<nil>",
	}
	for state, want := range cases {
		got := "<nil>"
		if c := chartFrom(&tfprotov6.RawState{JSON: []byte(state)}, def); c != nil {
			got = c.Repository.String() + " " + c.Name.String() + " " + c.Path.String()
		}
		if got != want {
			t.Errorf("%s: got %s, want %s", state, got, want)
		}
	}
}
