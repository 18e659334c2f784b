package helm

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// ParseValues parses a raw `values` YAML document; empty is no values.
func ParseValues(doc string) (map[string]any, error) {
	out := map[string]any{}
	if strings.TrimSpace(doc) == "" {
		return out, nil
	}
	if err := yaml.Unmarshal([]byte(doc), &out); err != nil {
		return nil, fmt.Errorf("values is not a YAML map: %w", err)
	}
	if out == nil {
		out = map[string]any{}
	}
	return out, nil
}

// Merge deep-merges overlay into base (overlay wins; maps merge, everything
// else is replaced) and returns base.
func Merge(base, overlay map[string]any) map[string]any {
	if base == nil {
		base = map[string]any{}
	}
	for k, v := range overlay {
		if om, ok := v.(map[string]any); ok {
			if bm, ok := base[k].(map[string]any); ok {
				base[k] = Merge(maps.Clone(bm), om)
				continue
			}
		}
		base[k] = v
	}
	return base
}

// SetPath sets values[a][b]… = v, creating maps on the way.
func SetPath(values map[string]any, v any, path ...string) {
	cur := values
	for _, k := range path[:len(path)-1] {
		next, ok := cur[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[k] = next
		}
		cur = next
	}
	cur[path[len(path)-1]] = v
}

// GetPath returns values[a][b]… or nil.
func GetPath(values map[string]any, path ...string) any {
	var cur any = values
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

// ---- Kueue ---------------------------------------------------------------

// Kueue's chart keeps the manager's whole configuration in one YAML string.
var kueueConfigPath = []string{"managerConfig", "controllerManagerConfigYaml"}

// KueueSettings are the typed parts of Kueue's manager configuration.
type KueueSettings struct {
	Frameworks                 []string
	ManageJobsWithoutQueueName bool
	// WaitForPodsReady nil leaves the chart's setting; Enable false removes it.
	WaitForPodsReady *WaitForPodsReady
}

// WaitForPodsReady is Kueue's all-or-nothing admission of a workload's pods.
type WaitForPodsReady struct {
	Enable  bool
	Timeout string
}

// KueueValues builds the values for Kueue's chart: the chart's defaults,
// then raw (the user's `values`), then the typed settings written into the
// manager configuration document, which is parsed (from raw when it sets
// it, else from the chart's default), changed and written back.
func KueueValues(chartDefaults, raw map[string]any, s KueueSettings) (map[string]any, error) {
	doc, _ := GetPath(raw, kueueConfigPath...).(string)
	if doc == "" {
		doc, _ = GetPath(chartDefaults, kueueConfigPath...).(string)
	}
	cfg, err := MergeKueueConfig(doc, s)
	if err != nil {
		return nil, err
	}
	out := Merge(map[string]any{}, raw)
	SetPath(out, cfg, kueueConfigPath...)
	return out, nil
}

// MergeKueueConfig writes the typed settings into a Kueue Configuration
// document and returns it. Every other setting in doc is kept.
func MergeKueueConfig(doc string, s KueueSettings) (string, error) {
	cfg := map[string]any{}
	if strings.TrimSpace(doc) != "" {
		if err := yaml.Unmarshal([]byte(doc), &cfg); err != nil {
			return "", fmt.Errorf("%s is not a YAML document: %w", strings.Join(kueueConfigPath, "."), err)
		}
	}
	if cfg == nil {
		cfg = map[string]any{}
	}
	if cfg["apiVersion"] == nil {
		cfg["apiVersion"] = "config.kueue.x-k8s.io/v1beta2"
		cfg["kind"] = "Configuration"
	}
	frameworks := make([]any, len(s.Frameworks))
	for i, f := range s.Frameworks {
		frameworks[i] = f
	}
	SetPath(cfg, frameworks, "integrations", "frameworks")
	cfg["manageJobsWithoutQueueName"] = s.ManageJobsWithoutQueueName
	if w := s.WaitForPodsReady; w != nil {
		if !w.Enable {
			delete(cfg, "waitForPodsReady")
		} else {
			wr, _ := cfg["waitForPodsReady"].(map[string]any)
			if wr == nil {
				wr = map[string]any{}
			}
			if w.Timeout != "" {
				wr["timeout"] = w.Timeout
			} else if wr["timeout"] == nil {
				wr["timeout"] = "5m"
			}
			if v, _ := cfg["apiVersion"].(string); strings.HasSuffix(v, "/v1beta1") {
				wr["enable"] = true // v1beta1 has an explicit switch; v1beta2 enables by presence
			}
			cfg["waitForPodsReady"] = wr
		}
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// KueueConfig is what matters of a live Kueue manager configuration for the
// conflict rules.
type KueueConfig struct {
	Frameworks                 []string
	ManageJobsWithoutQueueName bool
}

// ParseKueueConfig reads a Kueue Configuration document.
func ParseKueueConfig(doc string) (KueueConfig, error) {
	var raw struct {
		ManageJobsWithoutQueueName bool `json:"manageJobsWithoutQueueName"`
		Integrations               struct {
			Frameworks []string `json:"frameworks"`
		} `json:"integrations"`
	}
	if err := yaml.Unmarshal([]byte(doc), &raw); err != nil {
		return KueueConfig{}, err
	}
	return KueueConfig{Frameworks: raw.Integrations.Frameworks, ManageJobsWithoutQueueName: raw.ManageJobsWithoutQueueName}, nil
}

// KueueSettingsFromValues reads the typed settings back from a release's
// values (import).
func KueueSettingsFromValues(values map[string]any) (KueueSettings, bool) {
	doc, _ := GetPath(values, kueueConfigPath...).(string)
	if doc == "" {
		return KueueSettings{}, false
	}
	cfg := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &cfg); err != nil {
		return KueueSettings{}, false
	}
	c, _ := ParseKueueConfig(doc)
	s := KueueSettings{Frameworks: c.Frameworks, ManageJobsWithoutQueueName: c.ManageJobsWithoutQueueName}
	if wr, ok := cfg["waitForPodsReady"].(map[string]any); ok {
		t, _ := wr["timeout"].(string)
		s.WaitForPodsReady = &WaitForPodsReady{Enable: true, Timeout: t}
		if e, ok := wr["enable"].(bool); ok && !e {
			s.WaitForPodsReady.Enable = false
		}
	}
	return s, true
}

// FeatureGateValues renders a feature gate map as the Kueue chart's
// controllerManager.featureGates list, sorted by name.
func FeatureGateValues(gates map[string]bool) []any {
	names := make([]string, 0, len(gates))
	for n := range gates {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]any, 0, len(names))
	for _, n := range names {
		out = append(out, map[string]any{"name": n, "enabled": gates[n]})
	}
	return out
}

// ---- Volcano -------------------------------------------------------------

// VolcanoSchedulerConf renders volcano-scheduler.conf: actions, then one
// tier per list of plugin names.
func VolcanoSchedulerConf(actions []string, tiers [][]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "actions: %q\n", strings.Join(actions, ", "))
	b.WriteString("tiers:\n")
	for _, tier := range tiers {
		b.WriteString("- plugins:\n")
		for _, p := range tier {
			fmt.Fprintf(&b, "  - name: %s\n", p)
		}
	}
	return b.String()
}

// ParseVolcanoSchedulerConf reads actions and plugin tiers back.
func ParseVolcanoSchedulerConf(doc string) (actions []string, tiers [][]string, err error) {
	var raw struct {
		Actions string `json:"actions"`
		Tiers   []struct {
			Plugins []struct {
				Name string `json:"name"`
			} `json:"plugins"`
		} `json:"tiers"`
	}
	if err := yaml.Unmarshal([]byte(doc), &raw); err != nil {
		return nil, nil, err
	}
	for _, a := range strings.Split(raw.Actions, ",") {
		if a = strings.TrimSpace(a); a != "" {
			actions = append(actions, a)
		}
	}
	for _, t := range raw.Tiers {
		var names []string
		for _, p := range t.Plugins {
			names = append(names, p.Name)
		}
		tiers = append(tiers, names)
	}
	return actions, tiers, nil
}

// VolcanoSchedulerConfPath is where the Volcano chart takes a whole scheduler
// configuration that replaces its default file.
var VolcanoSchedulerConfPath = []string{"custom", "scheduler_config_override"}

// ParseDuration accepts Go durations for `timeout` attributes.
func ParseDuration(s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as \"5m\" or \"90s\"", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: the timeout must be positive", s)
	}
	return d, nil
}
