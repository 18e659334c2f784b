package kueue

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// hostnameLabel is the node label Kueue allows only as a topology's last level.
const hostnameLabel = "kubernetes.io/hostname"

type topologyModel struct {
	object.ClusterMeta
	object.LiveChanges
	Levels []types.String `tfsdk:"levels"`
}

// NewTopology is aiplatform_topology.
func NewTopology() resource.Resource {
	return object.New[topologyModel](object.Spec[topologyModel]{
		TypeName: "topology",
		Kind:     topologyKind,
		Description: "A Kueue Topology for topology-aware scheduling (TAS): the node labels that describe where a node " +
			"sits, from the widest domain (a block, a zone) to the narrowest (a rack, a host). A ResourceFlavor names it in " +
			"`topology_name`; a workload asking for `kueue.x-k8s.io/podset-required-topology: <level>` is then placed " +
			"inside one domain of that level.",
		Attributes: map[string]schema.Attribute{
			"levels": schema.ListAttribute{
				ElementType: types.StringType, Required: true,
				MarkdownDescription: "Node labels of the levels, widest first, e.g. `[\"cloud.example.com/block\", \"cloud.example.com/rack\", " +
					"\"kubernetes.io/hostname\"]` (1 to 16, unique). `kubernetes.io/hostname` may only be the last level. " +
					"Kueue makes the levels immutable: changing them replaces the Topology.",
				Validators:    []validator.List{listvalidator.SizeBetween(1, 16), listvalidator.UniqueValues(), listvalidator.ValueStringsAre(validators.QualifiedName())},
				PlanModifiers: []planmodifier.List{listplanmodifier.RequiresReplace()},
			},
		},
		Fields: func(m *topologyModel) map[string]any {
			levels := make([]any, len(m.Levels))
			for i, l := range m.Levels {
				levels[i] = map[string]any{"nodeLabel": l.ValueString()}
			}
			return map[string]any{"spec": map[string]any{"levels": levels}}
		},
		Read: func(live map[string]any, m *topologyModel) {
			var levels []types.String
			for _, l := range object.Items(live, "spec", "levels") {
				levels = append(levels, object.String(l["nodeLabel"], types.StringNull()))
			}
			m.Levels = levels
		},
		Validate: func(m *topologyModel) diag.Diagnostics {
			var diags diag.Diagnostics
			for i, l := range m.Levels {
				if l.IsUnknown() || l.IsNull() || l.ValueString() != hostnameLabel || i == len(m.Levels)-1 {
					continue
				}
				diags.AddAttributeError(path.Root("levels").AtListIndex(i), "kubernetes.io/hostname must be the last level",
					fmt.Sprintf("level %d of %d is %s: Kueue allows the hostname label only as the lowest (last) level of a topology.", i+1, len(m.Levels), hostnameLabel))
			}
			return diags
		},
	})
}

// topologyLevels reads the node labels of a live Topology's levels.
func topologyLevels(live map[string]any) []string {
	var out []string
	for _, l := range object.Items(live, "spec", "levels") {
		if s, ok := l["nodeLabel"].(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}
