package installs

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/helm"
)

type volcanoModel struct {
	releaseModel
	Actions     []types.String   `tfsdk:"actions"`
	PluginTiers [][]types.String `tfsdk:"plugin_tiers"`
}

// NewVolcano is aiplatform_volcano.
func NewVolcano() resource.Resource {
	return newRelease[volcanoModel](chartSpec[volcanoModel]{
		TypeName: "volcano",
		Chart:    helm.Volcano,
		Description: "Volcano installed from its Helm chart with the Helm SDK, with the scheduler configuration as typed " +
			"`actions` and `plugin_tiers` (written as the chart's `custom.scheduler_config_override`). Install and upgrade are " +
			"atomic and wait until every object is ready; every refresh compares each object of the release with the live " +
			"cluster (`drift`).\n\n" +
			"**Kueue**: the plan fails when the live Kueue configuration (its ConfigMap `kueue-manager-config`, in any namespace) " +
			"or an `aiplatform_kueue` planned in the same configuration has a pod-based integration (`pod`, `deployment`, " +
			"`statefulset`) or `manageJobsWithoutQueueName`: Kueue's webhook would take Volcano's pods. The message says what to change.\n\n" +
			"The default chart is the upstream repository `https://volcano-sh.github.io/helm-charts`, chart `volcano`; the provider's " +
			"tests run offline against a stand-in chart, so the upstream chart's values were not exercised by them.",
		Attributes: map[string]schema.Attribute{
			"actions": schema.ListAttribute{ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Scheduler actions in order, e.g. `[\"enqueue\", \"allocate\", \"backfill\"]`. With `plugin_tiers` it replaces " +
					"the chart's scheduler configuration; unset keeps the chart's.",
				Validators: []validator.List{listvalidator.SizeAtLeast(1), listvalidator.UniqueValues(),
					listvalidator.ValueStringsAre(stringvalidator.OneOf(helm.VolcanoActions...))}},
			"plugin_tiers": schema.ListAttribute{ElementType: types.ListType{ElemType: types.StringType}, Optional: true,
				MarkdownDescription: "Plugin tiers, each a list of plugin names, e.g. `[[\"priority\", \"gang\", \"conformance\"], " +
					"[\"drf\", \"predicates\", \"proportion\", \"nodeorder\", \"binpack\"]]`.",
				Validators: []validator.List{listvalidator.SizeAtLeast(1)}},
		},
		Config: func(m *volcanoModel) (helm.Config, bool) {
			var c helm.VolcanoConfig
			if m.Actions != nil {
				c.Actions = strs(m.Actions)
				c.Tiers = tiers(m.PluginTiers)
			}
			return c, true
		},
		FromValues: func(values map[string]any, m *volcanoModel) {
			c, ok := helm.VolcanoConfigFromValues(values)
			if !ok {
				return
			}
			m.Actions = typedStrings(c.Actions)
			m.PluginTiers = nil
			for _, t := range c.Tiers {
				m.PluginTiers = append(m.PluginTiers, typedStrings(t))
			}
		},
		Validate: func(m *volcanoModel) diag.Diagnostics {
			var diags diag.Diagnostics
			if (m.Actions == nil) != (m.PluginTiers == nil) {
				diags.AddAttributeError(path.Root("plugin_tiers"), "Incomplete scheduler configuration",
					"actions and plugin_tiers: set both (they replace the chart's whole scheduler configuration) or neither.")
			}
			for i, t := range m.PluginTiers {
				if len(t) == 0 {
					diags.AddAttributeError(path.Root("plugin_tiers").AtListIndex(i), "Empty tier",
						fmt.Sprintf("plugin_tiers[%d]: a tier needs at least one plugin.", i))
				}
			}
			return diags
		},
	})
}

func strs(l []types.String) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = s.ValueString()
	}
	return out
}

func tiers(l [][]types.String) [][]string {
	out := make([][]string, len(l))
	for i, t := range l {
		out[i] = strs(t)
	}
	return out
}

func typedStrings(l []string) []types.String {
	out := make([]types.String, len(l))
	for i, s := range l {
		out[i] = types.StringValue(s)
	}
	return out
}
