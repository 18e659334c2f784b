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

	"github.com/aiplatform/terraform-provider-aiplatform/internal/planned"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
)

func kueueChartDir(t *testing.T) string {
	t.Helper()
	dir, err := binaries.ModuleDir(context.Background(), "sigs.k8s.io/kueue", "v0.17.0")
	if err != nil {
		t.Skipf("Kueue module not available: %v", err)
	}
	return filepath.Join(dir, "charts", "kueue")
}

// render renders a chart client-side, as `helm template` does.
func render(t *testing.T, src Source, vals map[string]any) []string {
	t.Helper()
	ch, err := LoadChart(src)
	if err != nil {
		t.Fatal(err)
	}
	in := action.NewInstall(&action.Configuration{})
	in.ClientOnly, in.DryRun, in.ReleaseName, in.Namespace = true, true, "kueue", "kueue-system"
	in.KubeVersion = &chartutil.KubeVersion{Version: "v1.36.3", Major: "1", Minor: "36"}
	in.PostRenderer = keepCRDs{}
	rel, err := in.Run(ch, vals)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Objects(rel)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	return append(out, rel.Manifest)
}

// The typed settings land in the manager configuration the chart renders,
// and the chart's own defaults (which include pod, deployment and
// statefulset) are replaced.
func TestKueueValuesRender(t *testing.T) {
	dir := kueueChartDir(t)
	ch, err := LoadChart(Source{Path: dir, Version: "0.17.0"})
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := KueueManagerConfig(ch.Values)
	def, _ := ParseKueueManagerConfig(doc)
	if !slices.Contains(def.Frameworks, "pod") {
		t.Fatalf("the chart's default frameworks changed: %v", def.Frameworks)
	}
	raw, _ := ParseValues("controllerManager:\n  replicas: 2\n")
	vals, err := KueueConfig{
		Frameworks:       []string{"batch/job", "trainer.kubeflow.org/trainjob"},
		WaitForPodsReady: &WaitForPodsReady{Enable: true, Timeout: "7m"},
	}.Values(ch.Values, raw)
	if err != nil {
		t.Fatal(err)
	}
	out := render(t, Source{Path: dir}, vals)
	manifest := out[len(out)-1]
	objs := out[:len(out)-1]
	t.Logf("%d objects rendered", len(objs))
	for _, want := range []string{"frameworks:\n      - batch/job\n      - trainer.kubeflow.org/trainjob", "manageJobsWithoutQueueName: false",
		"timeout: 7m", "replicas: 2", "helm.sh/resource-policy: keep", "webhookServiceName: kueue-webhook-service"} {
		if !strings.Contains(manifest, want) {
			t.Errorf("rendered manifest lacks %q", want)
		}
	}
	if strings.Contains(manifest, "- pod\n") {
		t.Errorf("the pod integration is still rendered")
	}
	// Everything else of the chart's configuration is kept.
	if !strings.Contains(manifest, "c1f6bfd2.kueue.x-k8s.io") {
		t.Errorf("the chart's leader election settings were lost")
	}
}

func TestMergeKueueConfigKeepsOtherSettings(t *testing.T) {
	doc := "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nintegrations:\n  frameworks: [pod]\n  externalFrameworks: [Foo.v1.example.com]\nfairSharing:\n  enable: true\n"
	out, err := KueueConfig{Frameworks: []string{"batch/job"}, WaitForPodsReady: &WaitForPodsReady{Enable: true}}.ManagerConfig(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"externalFrameworks:\n  - Foo.v1.example.com", "fairSharing:\n  enable: true", "frameworks:\n  - batch/job",
		"waitForPodsReady:\n  enable: true\n  timeout: 5m"} {
		if !strings.Contains(out, want) {
			t.Errorf("merged config lacks %q:\n%s", want, out)
		}
	}
	s, ok := KueueConfigFromValues(map[string]any{"managerConfig": map[string]any{"controllerManagerConfigYaml": out}})
	if !ok || !slices.Equal(s.Frameworks, []string{"batch/job"}) || s.WaitForPodsReady == nil || !s.WaitForPodsReady.Enable {
		t.Errorf("settings read back: %+v", s)
	}
	off, _ := KueueConfig{Frameworks: []string{"batch/job"}, WaitForPodsReady: &WaitForPodsReady{Enable: false}}.ManagerConfig(out)
	if strings.Contains(off, "waitForPodsReady") {
		t.Errorf("waitForPodsReady not removed:\n%s", off)
	}
}

func TestVolcanoSchedulerConf(t *testing.T) {
	conf := VolcanoConfig{Actions: []string{"enqueue", "allocate"}, Tiers: [][]string{{"priority", "gang"}, {"drf", "binpack"}}}.SchedulerConf()
	c, err := ParseVolcanoSchedulerConf(conf)
	actions, tiers := c.Actions, c.Tiers
	if err != nil || !slices.Equal(actions, []string{"enqueue", "allocate"}) || len(tiers) != 2 || !slices.Equal(tiers[1], []string{"drf", "binpack"}) {
		t.Fatalf("round trip: %v %v %v\n%s", actions, tiers, err, conf)
	}
}

func TestMerge(t *testing.T) {
	base := map[string]any{"a": map[string]any{"b": 1, "c": 2}, "l": []any{1}}
	out := Merge(base, map[string]any{"a": map[string]any{"c": 3}, "l": []any{2}})
	if GetPath(out, "a", "b") != 1 || GetPath(out, "a", "c") != 3 || len(out["l"].([]any)) != 1 || out["l"].([]any)[0] != 2 {
		t.Fatalf("merge: %v", out)
	}
}

func TestConflictMessages(t *testing.T) {
	p := KueueConfig{Frameworks: []string{"batch/job", "pod", "deployment"}, ManageJobsWithoutQueueName: true}
	msg := kueueProblem(p, []string{"the cluster runs the Volcano scheduler (Deployment volcano-system/volcano-scheduler)"})
	for _, want := range []string{`integrations ["pod", "deployment"]`, `set integrations = ["batch/job"] and manage_jobs_without_queue_name = false`, "volcano-system/volcano-scheduler"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if got := (KueueConfig{Frameworks: []string{"pod"}}).JobFrameworks(); !slices.Equal(got, []string{"batch/job"}) {
		t.Errorf("jobFrameworks: %v", got)
	}
}

// Replicas and feature gates are written to the controller manager's values
// and read back with the manager configuration (import).
func TestKueueConfigRoundTrip(t *testing.T) {
	replicas := int64(2)
	in := KueueConfig{Frameworks: []string{"batch/job"}, ManageJobsWithoutQueueName: true, Replicas: &replicas,
		FeatureGates: map[string]bool{"TopologyAwareScheduling": true, "A": false}}
	vals, err := in.Values(nil, map[string]any{"controllerManager": map[string]any{"replicas": 1, "x": "kept"}})
	if err != nil {
		t.Fatal(err)
	}
	if GetPath(vals, "controllerManager", "x") != "kept" || GetPath(vals, "controllerManager", "replicas") != int64(2) {
		t.Fatalf("values: %v", vals)
	}
	gates, _ := GetPath(vals, "controllerManager", "featureGates").([]any)
	if len(gates) != 2 || gates[0].(map[string]any)["name"] != "A" {
		t.Fatalf("feature gates not sorted by name: %v", gates)
	}
	// A release's values come back from JSON: numbers are float64.
	b, _ := json.Marshal(vals)
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	out, ok := KueueConfigFromValues(back)
	if !ok || *out.Replicas != 2 || !out.ManageJobsWithoutQueueName || !slices.Equal(out.Frameworks, in.Frameworks) ||
		len(out.FeatureGates) != 2 || !out.FeatureGates["TopologyAwareScheduling"] {
		t.Fatalf("read back: %+v", out)
	}
	if _, ok := KueueConfigFromValues(map[string]any{}); ok {
		t.Errorf("values without a manager configuration read as one")
	}
}

// Each planned install sees the others of its run, sorted by chart and ID,
// and never itself; a re-plan replaces its earlier record.
func TestConflictRunRecordsPlans(t *testing.T) {
	r := planned.Of(new(int)) // a run of its own
	plan(r, Install{Chart: "Volcano", Namespace: "volcano-system", Name: "volcano"})
	plan(r, Install{Chart: "Kueue", Namespace: "b", Name: "kueue"})
	got := plan(r, Install{Chart: "Kueue", Namespace: "a", Name: "kueue", Config: KueueConfig{Frameworks: []string{"pod"}}})
	var ids []string
	for _, in := range got {
		ids = append(ids, in.Chart+" "+in.ID())
	}
	if !slices.Equal(ids, []string{"Kueue b/kueue", "Volcano volcano-system/volcano"}) {
		t.Fatalf("others planned: %v", ids)
	}
	got = plan(r, Install{Chart: "Volcano", Namespace: "volcano-system", Name: "volcano"})
	if k := ofChart(got, "Kueue"); len(k) != 2 || !k[0].Config.(KueueConfig).TakesUnlabelled() {
		t.Fatalf("Kueue installs seen by Volcano: %+v", k)
	}
}
