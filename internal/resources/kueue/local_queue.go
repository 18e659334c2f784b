package kueue

import (
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

type localQueueModel struct {
	object.NamespacedMeta
	object.LiveChanges
	ClusterQueue types.String `tfsdk:"cluster_queue"`
	StopPolicy   types.String `tfsdk:"stop_policy"`
}

// NewLocalQueue is aiplatform_local_queue.
func NewLocalQueue() resource.Resource {
	return object.New[localQueueModel](object.Spec[localQueueModel]{
		TypeName: "local_queue",
		Kind:     localQueueKind,
		Description: "A Kueue LocalQueue: the namespaced queue users submit to (label " +
			"`kueue.x-k8s.io/queue-name`), pointing at a ClusterQueue that holds the quota.",
		Attributes: map[string]schema.Attribute{
			"cluster_queue": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Name of the ClusterQueue this queue submits to. Kueue makes it immutable, so changing it replaces the LocalQueue.",
				Validators:          []validator.String{validators.DNSSubdomain()},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"stop_policy": schema.StringAttribute{
				Optional: true, Computed: true,
				Default:             stringdefault.StaticString("None"),
				MarkdownDescription: "`None` (default), `Hold` (admit nothing new from this queue) or `HoldAndDrain` (also evict its admitted workloads): stop one team without touching the others.",
				Validators:          []validator.String{stringvalidator.OneOf("None", "Hold", "HoldAndDrain")},
			},
		},
		Fields: func(m *localQueueModel) map[string]any {
			spec := map[string]any{"clusterQueue": m.ClusterQueue.ValueString()}
			object.Put(spec, "stopPolicy", m.StopPolicy)
			return map[string]any{"spec": spec}
		},
		ModifyPlan: planLocalQueue,
		Read: func(live map[string]any, m *localQueueModel) {
			m.ClusterQueue = object.String(object.Field(live, "spec", "clusterQueue"), m.ClusterQueue)
			m.StopPolicy = object.String(object.Field(live, "spec", "stopPolicy"), m.StopPolicy)
		},
	})
}
