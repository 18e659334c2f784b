package kueue

import (
	"math"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
)

type workloadPriorityClassModel struct {
	object.ClusterMeta
	object.LiveChanges
	Value       types.Int64  `tfsdk:"value"`
	Description types.String `tfsdk:"description"`
}

// NewWorkloadPriorityClass is aiplatform_workload_priority_class.
func NewWorkloadPriorityClass() resource.Resource {
	return object.New[workloadPriorityClassModel](object.Spec[workloadPriorityClassModel]{
		TypeName: "workload_priority_class",
		Kind:     workloadPriorityClassKind,
		Description: "A Kueue WorkloadPriorityClass: the priority Kueue uses to order and preempt workloads, " +
			"independent of the pods' own PriorityClass. Workloads select it with the label `kueue.x-k8s.io/priority-class`.",
		Attributes: map[string]schema.Attribute{
			"value": schema.Int64Attribute{
				Required:            true,
				MarkdownDescription: "Priority; higher wins. A 32-bit integer.",
				Validators:          []validator.Int64{int64validator.Between(math.MinInt32, math.MaxInt32)},
			},
			"description": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Free text, at most 2048 characters.",
				Validators:          []validator.String{stringvalidator.LengthAtMost(2048)},
			},
		},
		Fields: func(m *workloadPriorityClassModel) map[string]any {
			f := map[string]any{"value": m.Value.ValueInt64()}
			object.Put(f, "description", m.Description)
			return f
		},
		Read: func(live map[string]any, m *workloadPriorityClassModel) {
			m.Value = object.Int64(live["value"])
			m.Description = object.String(live["description"], m.Description)
		},
	})
}
