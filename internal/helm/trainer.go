package helm

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// Trainer is Kubeflow Trainer's chart (catalog.Trainer).
var Trainer = chartOf(catalog.Trainer)

// Where Trainer's chart keeps what TrainerConfig sets.
var (
	trainerJobSetInstallPath   = []string{"jobset", "install"}
	trainerRuntimesDefaultPath = []string{"runtimes", "defaultEnabled"}
)

const (
	// trainerDeployment is the manager's Deployment of Trainer's chart under
	// its default release name and of its kustomize manifests; other
	// releases are found by the chart's labels.
	trainerDeployment = "kubeflow-trainer-controller-manager"
	trainerLabels     = "app.kubernetes.io/name=kubeflow-trainer,app.kubernetes.io/component=manager"
	// RuntimeManagedBy labels the default runtimes, as the chart's own
	// installer Job labels them (its pre-delete hook and prune select it).
	RuntimeManagedByLabel = "trainer.kubeflow.org/managed-by"
	RuntimeManagedBy      = "runtimes-installer"
)

// TrainerConfig is Trainer's configuration as the provider types it.
type TrainerConfig struct {
	// InstallJobSet is the chart's jobset.install: JobSet installed as a
	// subchart of the release (only a chart that bundles it can).
	InstallJobSet bool
}

// Values builds the values for Trainer's chart: raw, with jobset.install
// set and every built-in runtime of the chart off. The chart would apply
// its runtimes with a post-install hook Job that installs kubectl from the
// internet (alpine, apk) and deletes them with a pre-delete hook of the same
// kind; the provider applies them itself (DefaultRuntimes), so the hooks
// are never rendered.
func (c TrainerConfig) Values(_, raw map[string]any) (map[string]any, error) {
	set := map[string]any{}
	SetPath(set, c.InstallJobSet, trainerJobSetInstallPath...)
	for _, p := range TrainerRuntimeToggles(raw) {
		SetPath(set, false, strings.Split(p, ".")...)
	}
	SetPath(set, false, trainerRuntimesDefaultPath...)
	// Merge copies the maps it changes: raw stays as it was.
	return Merge(Merge(map[string]any{}, raw), set), nil
}

// TrainerConfigFromValues reads the configuration back from a release's
// values (import). The chart's default for jobset.install is true.
func TrainerConfigFromValues(values map[string]any) TrainerConfig {
	install, ok := GetPath(values, trainerJobSetInstallPath...).(bool)
	return TrainerConfig{InstallJobSet: install || !ok}
}

// TrainerRuntimeToggles lists the values that switch on a built-in runtime
// of the chart (runtimes.defaultEnabled, runtimes.<name>.enabled,
// dataCache.runtimes.<name>.enabled, at any depth) and are true, as dotted
// paths, sorted.
func TrainerRuntimeToggles(values map[string]any) []string {
	var out []string
	var walk func(m map[string]any, prefix string)
	walk = func(m map[string]any, prefix string) {
		for k, v := range m {
			switch v := v.(type) {
			case map[string]any:
				walk(v, prefix+k+".")
			case bool:
				if v && (k == "enabled" || k == "defaultEnabled") {
					out = append(out, prefix+k)
				}
			}
		}
	}
	if r, ok := values["runtimes"].(map[string]any); ok {
		walk(r, "runtimes.")
	}
	if r, ok := GetPath(values, "dataCache", "runtimes").(map[string]any); ok {
		walk(r, "dataCache.runtimes.")
	}
	sort.Strings(out)
	return out
}

// DefaultRuntimes renders the chart's default ClusterTrainingRuntimes for
// a release (its name, namespace and values): the chart with
// runtimes.defaultEnabled=true, client-side, from which the manifest of its
// runtimes installer ConfigMap (key runtimes.yaml) is taken. Each runtime
// carries the label the chart's installer gives it.
func DefaultRuntimes(ch *chart.Chart, values map[string]any, namespace, name string) ([]*unstructured.Unstructured, error) {
	on := map[string]any{}
	SetPath(on, true, trainerRuntimesDefaultPath...)
	vals := Merge(Merge(map[string]any{}, values), on)
	top, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: name, Namespace: namespace, Revision: 1, IsInstall: true},
		chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("rendering the default runtimes of chart %s %s: %w", ch.Metadata.Name, ch.Metadata.Version, err)
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		return nil, fmt.Errorf("rendering the default runtimes of chart %s %s: %w", ch.Metadata.Name, ch.Metadata.Version, err)
	}
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !strings.Contains(files[k], "runtimes.yaml:") {
			continue
		}
		objs, err := parseManifests(files[k])
		if err != nil {
			continue
		}
		for _, o := range objs {
			doc, found, _ := unstructured.NestedString(o.Object, "data", "runtimes.yaml")
			if o.GetKind() != "ConfigMap" || !found {
				continue
			}
			runtimes, err := parseManifests(doc)
			if err != nil {
				return nil, fmt.Errorf("chart %s %s: the runtimes in ConfigMap %s: %w", ch.Metadata.Name, ch.Metadata.Version, o.GetName(), err)
			}
			for _, r := range runtimes {
				labels := r.GetLabels()
				if labels == nil {
					labels = map[string]string{}
				}
				labels[RuntimeManagedByLabel] = RuntimeManagedBy
				r.SetLabels(labels)
			}
			return runtimes, nil
		}
	}
	return nil, fmt.Errorf("chart %s %s renders no runtimes installer ConfigMap with runtimes.defaultEnabled=true: "+
		"its default runtimes are not known to this provider (set default_runtimes = false)", ch.Metadata.Name, ch.Metadata.Version)
}

// HasDependency says whether the chart carries the named subchart.
func HasDependency(ch *chart.Chart, name string) bool {
	for _, d := range ch.Dependencies() {
		if d.Metadata != nil && d.Metadata.Name == name {
			return true
		}
	}
	return false
}

// LiveTrainer finds Kubeflow Trainer controller managers in the cluster by
// their Deployments (any install method).
func LiveTrainer(ctx context.Context, c *kube.Client) ([]Install, error) {
	return liveDeployments(ctx, c, Trainer.Product, trainerDeployment, trainerLabels)
}
