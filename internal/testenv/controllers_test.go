package testenv

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/podrunner"
)

// Every registered controller names a chart that loads (its module in the
// module cache, or the stand-in in testdata), an install namespace, a
// release name and the API it serves; with CRDs to add, a directory of them.
// One without a chart names a manifest file with a Deployment in its
// namespace and the CRD of the API it serves. One that installs nothing
// runs the pods tests create and is on demand, so Options.PodRunner does not
// build it.
func TestControllerCharts(t *testing.T) {
	env := &Env{Dir: t.TempDir()}
	for _, a := range podrunner.Adapters {
		t.Run(a.Name, func(t *testing.T) {
			if !a.Installs() {
				if !a.OnDemand || slices.ContainsFunc(podrunner.Specs(), func(s binaries.Spec) bool { return s.Name == a.Binary.Name }) {
					t.Errorf("%s installs nothing but is not on demand: Options.PodRunner would build it", a.Name)
				}
				return
			}
			if a.Install.Manifests != (podrunner.Source{}) {
				checkManifests(t, a)
				return
			}
			if a.Install.Namespace == "" || a.Install.Release == "" || a.Install.Serves == "" {
				t.Errorf("install: %+v", a.Install)
			}
			if _, err := a.Install.Chart.Path(context.Background()); err != nil && a.Install.Chart.Module != "" {
				t.Skipf("no module: %v", err)
			}
			ch, err := env.chart(context.Background(), a)
			if err != nil {
				t.Fatal(err)
			}
			if ch.Metadata.Name == "" {
				t.Errorf("chart without a name: %+v", ch.Metadata)
			}
			if a.Install.CRDs != (podrunner.Source{}) && len(ch.CRDObjects()) == 0 {
				t.Errorf("chart %s: no CRDs from %+v", ch.Metadata.Name, a.Install.CRDs)
			}
		})
	}
}

func checkManifests(t *testing.T, a *podrunner.Adapter) {
	if a.Install.Chart != (podrunner.Source{}) || a.Install.Namespace == "" || a.Install.Serves == "" {
		t.Errorf("install: %+v", a.Install)
	}
	path, err := a.Install.Manifests.Path(context.Background())
	if err != nil {
		t.Skipf("no module: %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifestObjects(data)
	if err != nil {
		t.Fatal(err)
	}
	group, _, _ := strings.Cut(a.Install.Serves, "/")
	var deployment, crd bool
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			deployment = deployment || o.GetNamespace() == a.Install.Namespace
		case "CustomResourceDefinition":
			g, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			crd = crd || g == group
		}
	}
	if !deployment || !crd {
		t.Errorf("%s: a Deployment in %s: %v, a CRD of %s: %v (%d objects)", path, a.Install.Namespace, deployment, group, crd, len(objs))
	}
}

// Kueue(frameworks...) writes the frameworks into the chart's manager
// configuration, keeps its other settings, and manages no Job without a
// queue name.
func TestKueueControllerValues(t *testing.T) {
	ch, err := (&Env{Dir: t.TempDir()}).chart(context.Background(), podrunner.Kueue)
	if err != nil {
		t.Skipf("no Kueue chart: %v", err)
	}
	values, err := Kueue("batch/job", "ray.io/raycluster").values(ch.Values)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := values["managerConfig"].(map[string]any)["controllerManagerConfigYaml"].(string)
	var cfg struct {
		APIVersion     string
		Kind           string
		LeaderElection struct{ LeaderElect *bool }
		Integrations   struct{ Frameworks []string }
		Webhook        struct{ Port int }

		ManageJobsWithoutQueueName *bool
	}
	if err := yaml.Unmarshal([]byte(doc), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.APIVersion != "config.kueue.x-k8s.io/v1beta2" || cfg.Kind != "Configuration" ||
		!slices.Equal(cfg.Integrations.Frameworks, []string{"batch/job", "ray.io/raycluster"}) ||
		cfg.ManageJobsWithoutQueueName == nil || *cfg.ManageJobsWithoutQueueName ||
		cfg.Webhook.Port != 9443 || cfg.LeaderElection.LeaderElect == nil {
		t.Errorf("configuration:\n%s", doc)
	}
	def, err := Kueue().values(ch.Values)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := def["managerConfig"].(map[string]any)["controllerManagerConfigYaml"].(string); !yamlHasFrameworks(t, d, DefaultKueueFrameworks) {
		t.Errorf("default frameworks:\n%s", d)
	}
}

func yamlHasFrameworks(t *testing.T, doc string, want []string) bool {
	t.Helper()
	var cfg struct{ Integrations struct{ Frameworks []string } }
	if err := yaml.Unmarshal([]byte(doc), &cfg); err != nil {
		t.Fatal(err)
	}
	return slices.Equal(cfg.Integrations.Frameworks, want)
}
