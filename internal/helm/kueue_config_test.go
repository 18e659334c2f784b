package helm

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
)

// chartValues are the default values of Kueue's chart at a version.
func chartValues(t *testing.T, version string) map[string]any {
	t.Helper()
	dir, err := binaries.ModuleDir(context.Background(), "sigs.k8s.io/kueue", "v"+version)
	if err != nil {
		t.Skipf("Kueue module not available: %v", err)
	}
	ch, err := LoadChart(Source{Path: filepath.Join(dir, "charts", "kueue"), Version: version})
	if err != nil {
		t.Fatal(err)
	}
	return ch.Values
}

func TestKueueMinor(t *testing.T) {
	tag := func(s string) map[string]any {
		return map[string]any{"controllerManager": map[string]any{"manager": map[string]any{"image": map[string]any{"tag": s}}}}
	}
	for _, c := range []struct {
		app    string
		values []map[string]any
		want   int
	}{
		{"", []map[string]any{tag("release-0.19")}, 19},
		{"", []map[string]any{tag("v0.17.0")}, 17},
		{"", []map[string]any{{}, tag("v0.19.2")}, 19},             // the user's values set none: the chart's
		{"", []map[string]any{tag("v0.17.0"), tag("v0.19.2")}, 17}, // the user's image wins
		{"v0.19.2", []map[string]any{{}}, 19},
		{"", []map[string]any{tag("latest")}, 0},
		{"", []map[string]any{tag("v10.19.2")}, 0},
	} {
		if got := KueueMinor(c.app, c.values...); got != c.want {
			t.Errorf("KueueMinor(%q, %v) = %d, want %d", c.app, c.values, got, c.want)
		}
	}
	if got := KueueMinor("", chartValues(t, "0.19.2")); got != 19 {
		t.Errorf("the v0.19.2 chart's image tag reads as 0.%d", got)
	}
	if got := KueueMinor("", chartValues(t, "0.17.0")); got != 17 {
		t.Errorf("the v0.17.0 chart's image tag reads as 0.%d", got)
	}
}

// Every typed section is written into the manager configuration document
// the chart renders, with the chart's other settings kept, and reads back
// (import) as the same configuration.
func TestKueueConfigSectionsRoundTrip(t *testing.T) {
	defaults := chartValues(t, "0.19.2")
	i := func(n int64) *int64 { return &n }
	yes := true
	cfg := KueueConfig{
		Frameworks: []string{"batch/job", "jobset.x-k8s.io/jobset"},
		WaitForPodsReady: &WaitForPodsReady{Enable: true, Timeout: "10m", BlockAdmission: &yes, RecoveryTimeout: "3m",
			Requeuing: &KueueRequeuing{Timestamp: "Creation", BackoffLimitCount: i(5), BackoffBaseSeconds: i(30), BackoffMaxSeconds: i(900)}},
		FairSharing:          &KueueFairSharing{PreemptionStrategies: []string{"LessThanOrEqualToFinalShare", "LessThanInitialShare"}},
		AdmissionFairSharing: &KueueAdmissionFairSharing{UsageHalfLifeTime: "168h", UsageSamplingInterval: "5m", ResourceWeights: map[string]float64{"nvidia.com/gpu": 10, "cpu": 0.5}},
		MultiKueue:           &KueueMultiKueue{GCInterval: "2m", Origin: "platform", WorkerLostTimeout: "10m", DispatcherName: "kueue.x-k8s.io/multikueue-dispatcher-incremental", IncrementalStepSize: i(2)},
		FeatureGates:         map[string]bool{"AdmissionFairSharing": true},
	}
	vals, err := cfg.Values(defaults, nil)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := KueueManagerConfig(vals)
	var parsed map[string]any
	if err := yaml.Unmarshal([]byte(doc), &parsed); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"blockAdmission: true", "recoveryTimeout: 3m", "timestamp: Creation", "backoffLimitCount: 5",
		"preemptionStrategies:", "- LessThanInitialShare", "usageHalfLifeTime: 168h", "nvidia.com/gpu: 10",
		"dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental", "stepSize: 2",
		"resourceName: c1f6bfd2.kueue.x-k8s.io"} { // the chart's own setting, kept
		if !strings.Contains(doc, want) {
			t.Errorf("manager configuration lacks %q:\n%s", want, doc)
		}
	}
	back, ok := KueueConfigFromValues(vals)
	if !ok {
		t.Fatal("no manager configuration read back")
	}
	if !reflect.DeepEqual(back, cfg) {
		t.Errorf("read back\n%+v\nwant\n%+v", back, cfg)
	}
	rendered := render(t, Source{Path: chartDir(t, "0.19.2")}, vals)
	if manifest := rendered[len(rendered)-1]; !strings.Contains(manifest, "usageSamplingInterval: 5m") {
		t.Error("the rendered chart's ConfigMap lacks the admission fair sharing section")
	}
}

func chartDir(t *testing.T, version string) string {
	dir, err := binaries.ModuleDir(context.Background(), "sigs.k8s.io/kueue", "v"+version)
	if err != nil {
		t.Skipf("Kueue module not available: %v", err)
	}
	return filepath.Join(dir, "charts", "kueue")
}

// Turning WaitForPodsReady off: v0.17 waits only with a waitForPodsReady
// section, so removing it is enough; v0.19 waits by default, so the
// feature gate DisableWaitForPodsReady is set too (with the chart's or the
// configuration's other gates), and an import reads that back as
// enable = false, not as a feature gate.
func TestKueueWaitForPodsReadyOff(t *testing.T) {
	off := KueueConfig{Frameworks: []string{"batch/job"}, WaitForPodsReady: &WaitForPodsReady{Enable: false}}
	for _, c := range []struct {
		version  string
		gates    map[string]bool
		wantGate bool
	}{
		{"0.17.0", nil, false},
		{"0.19.2", nil, true},
		{"0.19.2", map[string]bool{"TopologyAwareScheduling": true}, true},
	} {
		cfg := off
		cfg.FeatureGates = c.gates
		vals, err := cfg.Values(chartValues(t, c.version), nil)
		if err != nil {
			t.Fatal(err)
		}
		gates := parseFeatureGates(GetPath(vals, kueueFeatureGatesPath...))
		if gates[DisableWaitForPodsReadyGate] != c.wantGate {
			t.Errorf("%s: feature gates %v, want DisableWaitForPodsReady=%v", c.version, gates, c.wantGate)
		}
		if c.gates["TopologyAwareScheduling"] && !gates["TopologyAwareScheduling"] {
			t.Errorf("%s: the configuration's gates are lost: %v", c.version, gates)
		}
		doc, _ := KueueManagerConfig(vals)
		if strings.Contains(doc, "waitForPodsReady") {
			t.Errorf("%s: waitForPodsReady still in the manager configuration:\n%s", c.version, doc)
		}
		back, _ := KueueConfigFromValues(vals)
		if back.WaitForPodsReady == nil || back.WaitForPodsReady.Enable {
			if c.wantGate {
				t.Errorf("%s: read back as %+v, want enable = false", c.version, back.WaitForPodsReady)
			}
		}
		if !reflect.DeepEqual(back.FeatureGates, c.gates) {
			t.Errorf("%s: feature gates read back as %v, want %v", c.version, back.FeatureGates, c.gates)
		}
	}
}
