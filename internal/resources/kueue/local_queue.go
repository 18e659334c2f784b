package kueue

import (
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

type localQueueModel struct {
	object.NamespacedMeta
	ClusterQueue types.String `tfsdk:"cluster_queue"`
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
		},
		Fields: func(m *localQueueModel) map[string]any {
			return map[string]any{"spec": map[string]any{"clusterQueue": m.ClusterQueue.ValueString()}}
		},
		Read: func(live map[string]any, m *localQueueModel) {
			m.ClusterQueue = object.String(object.Field(live, "spec", "clusterQueue"), m.ClusterQueue)
		},
	})
}
