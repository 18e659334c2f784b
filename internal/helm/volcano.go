package helm

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/catalog"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
)

// Volcano's chart (catalog.Volcano).
var Volcano = chartOf(catalog.Volcano)

// volcanoSchedulerConfPath is where Volcano's chart takes a whole scheduler
// configuration that replaces its default file.
var volcanoSchedulerConfPath = []string{"custom", "scheduler_config_override"}

// Volcano's presence in a cluster.
const (
	VolcanoCRD        = "podgroups.scheduling.volcano.sh"
	VolcanoScheduler  = "volcano-scheduler"
	volcanoSchedLabel = "app=volcano-scheduler"
)

// VolcanoActions are the scheduler's actions.
var VolcanoActions = []string{"enqueue", "allocate", "backfill", "preempt", "reclaim", "shuffle"}

// VolcanoConfig is Volcano's configuration as the provider types it: the
// scheduler's actions and plugin tiers, which together replace the chart's
// scheduler configuration. Actions nil keeps the chart's.
type VolcanoConfig struct {
	Actions []string
	Tiers   [][]string // each a list of plugin names
}

// Values builds the values for Volcano's chart: raw, with the scheduler
// configuration rendered into custom.scheduler_config_override when Actions
// are set.
func (c VolcanoConfig) Values(_, raw map[string]any) (map[string]any, error) {
	vals := Merge(map[string]any{}, raw)
	if c.Actions != nil {
		SetPath(vals, c.SchedulerConf(), volcanoSchedulerConfPath...)
	}
	return vals, nil
}

// SchedulerConf renders volcano-scheduler.conf: actions, then one tier per
// list of plugin names.
func (c VolcanoConfig) SchedulerConf() string {
	var b strings.Builder
	fmt.Fprintf(&b, "actions: %q\n", strings.Join(c.Actions, ", "))
	b.WriteString("tiers:\n")
	for _, tier := range c.Tiers {
		b.WriteString("- plugins:\n")
		for _, p := range tier {
			fmt.Fprintf(&b, "  - name: %s\n", p)
		}
	}
	return b.String()
}

// ParseVolcanoSchedulerConf reads actions and plugin tiers back.
func ParseVolcanoSchedulerConf(doc string) (VolcanoConfig, error) {
	var raw struct {
		Actions string `json:"actions"`
		Tiers   []struct {
			Plugins []struct {
				Name string `json:"name"`
			} `json:"plugins"`
		} `json:"tiers"`
	}
	var c VolcanoConfig
	if err := yaml.Unmarshal([]byte(doc), &raw); err != nil {
		return c, err
	}
	for _, a := range strings.Split(raw.Actions, ",") {
		if a = strings.TrimSpace(a); a != "" {
			c.Actions = append(c.Actions, a)
		}
	}
	for _, t := range raw.Tiers {
		var names []string
		for _, p := range t.Plugins {
			names = append(names, p.Name)
		}
		c.Tiers = append(c.Tiers, names)
	}
	return c, nil
}

// VolcanoConfigFromValues reads the scheduler configuration back from a
// release's values (import); ok is false when they set none.
func VolcanoConfigFromValues(values map[string]any) (c VolcanoConfig, ok bool) {
	doc, _ := GetPath(values, volcanoSchedulerConfPath...).(string)
	if doc == "" {
		return c, false
	}
	c, err := ParseVolcanoSchedulerConf(doc)
	return c, err == nil
}

// LiveVolcano describes the Volcano found in the cluster: its PodGroup CRD or
// a volcano-scheduler Deployment. Empty when there is none.
func LiveVolcano(ctx context.Context, c *kube.Client) ([]string, error) {
	var out []string
	deps, err := c.DeploymentsNamed(ctx, VolcanoScheduler, volcanoSchedLabel)
	if err != nil {
		return nil, err
	}
	for _, d := range deps {
		out = append(out, fmt.Sprintf("the cluster runs the Volcano scheduler (Deployment %s/%s)", d.Namespace, d.Name))
	}
	crd, err := c.CRD(ctx, VolcanoCRD)
	if err != nil {
		return nil, err
	}
	switch {
	case crd != nil && len(deps) > 0:
		out = append(out, fmt.Sprintf("the cluster has Volcano's CRD %s", VolcanoCRD))
	case crd != nil:
		out = append(out, fmt.Sprintf("the cluster has Volcano's CRD %s but no volcano-scheduler Deployment (a renamed "+
			"scheduler, or CRDs left behind by an uninstall: then delete the CRD, or destroy aiplatform_volcano with remove_crds = true)", VolcanoCRD))
	}
	return out, nil
}
