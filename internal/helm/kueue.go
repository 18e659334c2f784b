package helm

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// Kueue's chart (charts/kueue of sigs.k8s.io/kueue; upstream's OCI chart),
// its coordinates as internal/catalog states them.
var Kueue = Chart{
	Product:   "Kueue",
	Default:   Source{Repository: catalog.KueueChartRepo, Name: catalog.KueueChartName, Version: catalog.KueueDefaultVersion},
	Release:   catalog.KueueRelease,
	Namespace: catalog.KueueNamespace,
	Upgrades:  catalog.KueueUpgrades,
}

// Where Kueue's chart keeps what KueueConfig sets: the manager's whole
// configuration is one YAML string value; replicas and feature gates are
// values of the controller manager's Deployment.
var (
	kueueManagerConfigPath = []string{"managerConfig", "controllerManagerConfigYaml"}
	kueueReplicasPath      = []string{"controllerManager", "replicas"}
	kueueFeatureGatesPath  = []string{"controllerManager", "featureGates"}
)

// Kueue's manager configuration in the cluster, whoever installed it.
const (
	kueueConfigMap = "kueue-manager-config"
	kueueConfigKey = "controller_manager_config.yaml"
	kueueLabel     = "app.kubernetes.io/name=kueue"
)

// KueueConfig is Kueue's configuration as the provider types it: what
// aiplatform_kueue sets, what the conflict rules judge (planned or found in
// the cluster) and what an import reads back from a release.
type KueueConfig struct {
	// Frameworks are integrations.frameworks of the manager configuration.
	Frameworks                 []string
	ManageJobsWithoutQueueName bool
	// WaitForPodsReady nil leaves the chart's setting; Enable false removes it.
	WaitForPodsReady *WaitForPodsReady
	// FeatureGates nil leaves the chart's (controllerManager.featureGates);
	// an empty map sets none.
	FeatureGates map[string]bool
	// Replicas nil leaves the chart's (controllerManager.replicas).
	Replicas *int64
	// FairSharing, AdmissionFairSharing, MultiKueue: nil leaves the
	// manager configuration's section (kueue_config.go).
	FairSharing          *KueueFairSharing
	AdmissionFairSharing *KueueAdmissionFairSharing
	MultiKueue           *KueueMultiKueue
}

// WaitForPodsReady is Kueue's all-or-nothing admission of a workload's pods.
// Kueue v0.19 and later wait by default (30m) without a waitForPodsReady
// section: Enable false then also sets the feature gate
// DisableWaitForPodsReady.
type WaitForPodsReady struct {
	Enable          bool
	Timeout         string
	BlockAdmission  *bool
	RecoveryTimeout string
	Requeuing       *KueueRequeuing
}

// PodBasedFrameworks are the Kueue integrations that intercept plain Pods.
var PodBasedFrameworks = []string{"pod", "deployment", "statefulset"}

// PodBased lists the configuration's pod-based frameworks.
func (c KueueConfig) PodBased() []string {
	var out []string
	for _, f := range c.Frameworks {
		if slices.Contains(PodBasedFrameworks, f) {
			out = append(out, f)
		}
	}
	return out
}

// TakesUnlabelled says whether this Kueue takes pods or jobs that carry no
// kueue.x-k8s.io/queue-name label: a pod-based integration, or
// manageJobsWithoutQueueName.
func (c KueueConfig) TakesUnlabelled() bool {
	return len(c.PodBased()) > 0 || c.ManageJobsWithoutQueueName
}

// JobFrameworks are the frameworks minus the pod-based ones (batch/job when
// nothing is left): the fix to suggest when pod-based ones are refused.
func (c KueueConfig) JobFrameworks() []string {
	var out []string
	for _, f := range c.Frameworks {
		if !slices.Contains(PodBasedFrameworks, f) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		out = []string{"batch/job"}
	}
	return out
}

// Values builds the values for Kueue's chart: raw (the user's `values`),
// then the configuration written into the manager configuration document
// (parsed from raw when it sets it, else from the chart's default, changed
// and written back), then the controller manager's replicas and feature
// gates.
func (c KueueConfig) Values(chartDefaults, raw map[string]any) (map[string]any, error) {
	doc, _ := KueueManagerConfig(raw)
	if doc == "" {
		doc, _ = KueueManagerConfig(chartDefaults)
	}
	cfg, err := c.ManagerConfig(doc)
	if err != nil {
		return nil, err
	}
	out := Merge(map[string]any{}, raw)
	SetPath(out, cfg, kueueManagerConfigPath...)
	if c.Replicas != nil {
		SetPath(out, *c.Replicas, kueueReplicasPath...)
	}
	current := Merge(Merge(map[string]any{}, chartDefaults), raw)
	if gates := c.featureGates(current, KueueMinor("", raw, chartDefaults)); gates != nil {
		SetPath(out, featureGateValues(gates), kueueFeatureGatesPath...)
	}
	return out, nil
}

// KueueManagerConfig returns the manager configuration document that
// values (a chart's defaults, a user's `values`, a release's) set.
func KueueManagerConfig(values map[string]any) (doc string, ok bool) {
	doc, ok = GetPath(values, kueueManagerConfigPath...).(string)
	return doc, ok
}

// ManagerConfig writes the configuration's manager settings (frameworks,
// manageJobsWithoutQueueName, waitForPodsReady) into a Kueue Configuration
// document and returns it. Every other setting in doc is kept.
func (c KueueConfig) ManagerConfig(doc string) (string, error) {
	cfg := map[string]any{}
	if strings.TrimSpace(doc) != "" {
		if err := yaml.Unmarshal([]byte(doc), &cfg); err != nil {
			return "", fmt.Errorf("%s is not a YAML document: %w", strings.Join(kueueManagerConfigPath, "."), err)
		}
	}
	if cfg == nil {
		cfg = map[string]any{}
	}
	if cfg["apiVersion"] == nil {
		cfg["apiVersion"] = "config.kueue.x-k8s.io/v1beta2"
		cfg["kind"] = "Configuration"
	}
	frameworks := make([]any, len(c.Frameworks))
	for i, f := range c.Frameworks {
		frameworks[i] = f
	}
	SetPath(cfg, frameworks, "integrations", "frameworks")
	cfg["manageJobsWithoutQueueName"] = c.ManageJobsWithoutQueueName
	if w := c.WaitForPodsReady; w != nil {
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
	c.writeSections(cfg)
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// ParseKueueManagerConfig reads the frameworks and
// manageJobsWithoutQueueName of a Kueue Configuration document.
func ParseKueueManagerConfig(doc string) (KueueConfig, error) {
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

// KueueConfigFromValues reads the configuration back from a release's values
// (import). hasManagerConfig is false when the values hold no readable
// manager configuration; replicas and feature gates are read either way.
func KueueConfigFromValues(values map[string]any) (c KueueConfig, hasManagerConfig bool) {
	if n, ok := GetPath(values, kueueReplicasPath...).(float64); ok {
		r := int64(n)
		c.Replicas = &r
	}
	c.FeatureGates = parseFeatureGates(GetPath(values, kueueFeatureGatesPath...))
	// WaitForPodsReady turned off on v0.19+ (Values sets the gate).
	disabled := c.FeatureGates[DisableWaitForPodsReadyGate]
	if disabled {
		delete(c.FeatureGates, DisableWaitForPodsReadyGate)
		if len(c.FeatureGates) == 0 {
			c.FeatureGates = nil
		}
	}
	doc, _ := KueueManagerConfig(values)
	if doc == "" {
		return c, false
	}
	cfg := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &cfg); err != nil {
		return c, false
	}
	m, _ := ParseKueueManagerConfig(doc)
	c.Frameworks, c.ManageJobsWithoutQueueName = m.Frameworks, m.ManageJobsWithoutQueueName
	if wr, ok := cfg["waitForPodsReady"].(map[string]any); ok {
		t, _ := wr["timeout"].(string)
		c.WaitForPodsReady = &WaitForPodsReady{Enable: true, Timeout: t}
		if e, ok := wr["enable"].(bool); ok && !e {
			c.WaitForPodsReady.Enable = false
		}
	}
	if disabled {
		c.WaitForPodsReady = &WaitForPodsReady{Enable: false}
	}
	c.readSections(cfg)
	return c, true
}

// featureGateValues renders a feature gate map as the Kueue chart's
// controllerManager.featureGates list, sorted by name.
func featureGateValues(gates map[string]bool) []any {
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

// LiveKueue finds Kueue manager configurations in every namespace: the
// ConfigMap kueue-manager-config (any install method) and ConfigMaps of
// Kueue's chart under another release name. Each is an Install of Kueue
// whose Config is a KueueConfig.
func LiveKueue(ctx context.Context, c *kube.Client) ([]Install, error) {
	cms, err := c.ConfigMapsNamed(ctx, kueueConfigMap, kueueLabel)
	if err != nil {
		return nil, err
	}
	var out []Install
	for _, cm := range cms {
		doc, ok := cm.Data[kueueConfigKey]
		if !ok {
			continue
		}
		cfg, err := ParseKueueManagerConfig(doc)
		if err != nil {
			continue
		}
		name := strings.TrimSuffix(cm.Name, "-manager-config")
		if rel := cm.Annotations[releaseNameAnnotation]; rel != "" {
			name = rel
		}
		out = append(out, Install{Chart: Kueue.Product, Namespace: cm.Namespace, Name: name, Config: cfg, Found: "ConfigMap " + cm.Name})
	}
	return out, nil
}
