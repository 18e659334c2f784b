package helm

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
)

func moduleChart(t *testing.T, module, version, dir string) string {
	t.Helper()
	mod, err := binaries.ModuleDir(context.Background(), module, version)
	if err != nil {
		t.Skipf("%s not available: %v", module, err)
	}
	return filepath.Join(mod, dir)
}

func trainerChartDir(t *testing.T) string {
	return moduleChart(t, "github.com/kubeflow/trainer/v2", "v2.3.0", "charts/kubeflow-trainer")
}

// renderRelease renders a chart client-side as release namespace/name and
// returns its objects as Kind/name and its hooks' names.
func renderRelease(t *testing.T, src Source, namespace, name string, vals map[string]any) (objects, hooks []string) {
	t.Helper()
	ch, err := LoadChart(src)
	if err != nil {
		t.Fatal(err)
	}
	in := action.NewInstall(&action.Configuration{})
	in.ClientOnly, in.DryRun, in.ReleaseName, in.Namespace = true, true, name, namespace
	in.KubeVersion = &chartutil.KubeVersion{Version: "v1.36.3", Major: "1", Minor: "36"}
	rel, err := in.Run(ch, vals)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Objects(rel)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		objects = append(objects, o.GetKind()+"/"+o.GetName())
	}
	for _, h := range rel.Hooks {
		hooks = append(hooks, h.Name)
	}
	return objects, hooks
}

// The Trainer's values as the provider sets them: no JobSet subchart, and
// none of the chart's runtime hooks (which install kubectl from the
// internet) even when the user's values ask for runtimes; the user's other
// values are kept and not changed in place.
func TestTrainerValuesRender(t *testing.T) {
	dir := trainerChartDir(t)
	raw := map[string]any{
		"manager":  map[string]any{"replicas": 2},
		"runtimes": map[string]any{"defaultEnabled": true, "torchDistributed": map[string]any{"enabled": true}},
	}
	vals, err := TrainerConfig{}.Values(nil, raw)
	if err != nil {
		t.Fatal(err)
	}
	if GetPath(raw, "runtimes", "defaultEnabled") != true {
		t.Errorf("Values changed the user's values: %v", raw)
	}
	if GetPath(vals, "jobset", "install") != false || GetPath(vals, "runtimes", "torchDistributed", "enabled") != false ||
		GetPath(vals, "runtimes", "defaultEnabled") != false || GetPath(vals, "manager", "replicas") != 2 {
		t.Fatalf("values: %v", vals)
	}
	objs, hooks := renderRelease(t, Source{Path: dir, Version: "2.3.0"}, "kubeflow-system", "kubeflow-trainer", vals)
	if len(hooks) != 0 {
		t.Errorf("hooks rendered: %v", hooks)
	}
	all := strings.Join(objs, " ")
	for _, want := range []string{"Deployment/kubeflow-trainer-controller-manager", "CustomResourceDefinition/trainjobs.trainer.kubeflow.org",
		"ValidatingWebhookConfiguration/validator.trainer.kubeflow.org"} {
		if !strings.Contains(all, want) {
			t.Errorf("rendered objects lack %s: %s", want, all)
		}
	}
	if strings.Contains(all, "jobset-controller") || strings.Contains(all, "runtimes-installer") {
		t.Errorf("JobSet or the runtimes installer rendered: %s", all)
	}
	// The chart's own default would install JobSet: an import reads it so.
	if !TrainerConfigFromValues(map[string]any{}).InstallJobSet || TrainerConfigFromValues(vals).InstallJobSet {
		t.Errorf("jobset.install read back wrong")
	}
}

func TestTrainerRuntimeToggles(t *testing.T) {
	got := TrainerRuntimeToggles(map[string]any{
		"runtimes": map[string]any{"defaultEnabled": false, "jaxDistributed": map[string]any{"enabled": true},
			"torchtuneDistributed": map[string]any{"llama3_2_1B": map[string]any{"enabled": true}}},
		"dataCache": map[string]any{"enabled": true, "runtimes": map[string]any{"torchDistributedWithCache": map[string]any{"enabled": true}}},
	})
	want := []string{"dataCache.runtimes.torchDistributedWithCache.enabled", "runtimes.jaxDistributed.enabled", "runtimes.torchtuneDistributed.llama3_2_1B.enabled"}
	if !slices.Equal(got, want) {
		t.Fatalf("toggles %v, want %v", got, want)
	}
}

// The default runtimes come from the chart's runtimes installer ConfigMap,
// rendered with the release's values: v2.3.0 has eight, labelled as the
// chart's installer labels them and exempt from the runtime webhooks; an
// image override in the values reaches them. The same from the release's
// values after a JSON round trip (as Helm stores them).
func TestDefaultRuntimes(t *testing.T) {
	ch, err := LoadChart(Source{Path: trainerChartDir(t), Version: "2.3.0"})
	if err != nil {
		t.Fatal(err)
	}
	vals, _ := TrainerConfig{}.Values(nil, map[string]any{"runtimes": map[string]any{"deepspeedDistributed": map[string]any{"image": map[string]any{"tag": "pinned"}}}})
	b, _ := json.Marshal(vals)
	var stored map[string]any
	_ = json.Unmarshal(b, &stored)
	objs, err := DefaultRuntimes(ch, stored, "kubeflow-system", "kubeflow-trainer")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.GetName())
		if o.GetKind() != "ClusterTrainingRuntime" || o.GetLabels()[RuntimeManagedByLabel] != RuntimeManagedBy ||
			o.GetLabels()["trainer.kubeflow.org/webhook-validation"] != "disabled" {
			t.Errorf("runtime %s: kind %s labels %v", o.GetName(), o.GetKind(), o.GetLabels())
		}
		if o.GetName() == "deepspeed-distributed" {
			if b, _ := json.Marshal(o.Object); !strings.Contains(string(b), "deepspeed-runtime:pinned") {
				t.Errorf("the image override did not reach deepspeed-distributed: %s", b)
			}
		}
	}
	want := []string{"torch-distributed", "deepspeed-distributed", "mlx-distributed", "jax-distributed", "xgboost-distributed",
		"torchtune-llama3.2-1b", "torchtune-llama3.2-3b", "torchtune-qwen2.5-1.5b"}
	if !slices.Equal(names, want) {
		t.Fatalf("default runtimes %v, want %v", names, want)
	}
	if HasDependency(ch, "jobset") {
		t.Errorf("the module's chart carries a JobSet subchart")
	}
}

// JobSet's chart from the module: the version is the release's without the
// "v", and it renders the controller and its fixed-name webhooks.
func TestJobSetChartRender(t *testing.T) {
	dir := moduleChart(t, "sigs.k8s.io/jobset", "v0.12.0", "charts/jobset")
	objs, hooks := renderRelease(t, Source{Path: dir, Version: "0.12.0"}, JobSet.Namespace, JobSet.Release, nil)
	all := strings.Join(objs, " ")
	for _, want := range []string{"Deployment/jobset-controller", "ValidatingWebhookConfiguration/jobset-validating-webhook-configuration",
		"MutatingWebhookConfiguration/jobset-mutating-webhook-configuration"} {
		if !strings.Contains(all, want) {
			t.Errorf("rendered objects lack %s: %s", want, all)
		}
	}
	if len(hooks) != 0 {
		t.Errorf("hooks: %v", hooks)
	}
	if v := JobSet.Default.Version; "v"+v != "v0.12.0" {
		t.Errorf("default version %s", v)
	}
}

// Who brings JobSet, and how the conflict messages name them.
func TestJobSetSources(t *testing.T) {
	js := Install{Chart: JobSet.Product, Namespace: "jobset-system", Name: "jobset"}
	bundled := Install{Chart: Trainer.Product, Namespace: "kubeflow-system", Name: "kubeflow-trainer", Config: TrainerConfig{InstallJobSet: true}}
	plain := Install{Chart: Trainer.Product, Namespace: "kubeflow-system", Name: "kubeflow-trainer", Config: TrainerConfig{}}
	if !providesJobSet(js) || !providesJobSet(bundled) || providesJobSet(plain) || providesJobSet(Install{Chart: Kueue.Product}) {
		t.Fatal("providesJobSet")
	}
	if d := describeJobSetSource(bundled); !strings.Contains(d, "install_jobset = true") || !strings.Contains(d, "kubeflow-system/kubeflow-trainer") {
		t.Errorf("bundled: %s", d)
	}
	judging := map[string]int{}
	for _, r := range rules {
		for _, c := range r.Charts {
			judging[c]++
		}
	}
	if judging[Trainer.Product] < 3 || judging[JobSet.Product] < 1 {
		t.Errorf("rules judging Trainer %d (want 3 or more), JobSet %d (want 1 or more)", judging[Trainer.Product], judging[JobSet.Product])
	}
}

// A Secret's data keys rendered empty are left to the controller that fills
// them (JobSet's webhook certificates); everything else is compared as is.
func TestWithoutPlaceholders(t *testing.T) {
	secret := func(data map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": "jobset-webhook-server-cert"}, "data": data}}
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"a": ""}}}
	in := []*unstructured.Unstructured{secret(map[string]any{"tls.crt": "", "ca.crt": ""}), secret(map[string]any{"tls.crt": "", "kept": "eA=="}), cm}
	out := withoutPlaceholders(in)
	if _, has := out[0].Object["data"]; has {
		t.Errorf("all-placeholder Secret keeps data: %v", out[0].Object)
	}
	if d := out[1].Object["data"].(map[string]any); len(d) != 1 || d["kept"] != "eA==" {
		t.Errorf("Secret data: %v", d)
	}
	if out[2] != cm || len(in[0].Object["data"].(map[string]any)) != 2 {
		t.Errorf("a ConfigMap was changed, or the input was")
	}
}
