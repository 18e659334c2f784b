package gpu

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/capacity"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/kube"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/resources/object"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/validators"
)

// NewCapacityDataSource is data.aiplatform_gpu_capacity.
func NewCapacityDataSource() datasource.DataSource { return &capacityDataSource{} }

type capacityDataSource struct{ client *kube.Client }

type capacityModel struct {
	NodeSelector     types.Map    `tfsdk:"node_selector"`
	GPUResource      types.String `tfsdk:"gpu_resource"`
	Nodes            []nodeUsage  `tfsdk:"nodes"`
	AllocatableTotal types.Int64  `tfsdk:"allocatable_total"`
	RequestedTotal   types.Int64  `tfsdk:"requested_total"`
	FreeTotal        types.Int64  `tfsdk:"free_total"`
	LargestFreeBlock types.Int64  `tfsdk:"largest_free_block"`
	WholeFreeNodes   types.Int64  `tfsdk:"whole_free_nodes"`
}

type nodeUsage struct {
	Name        types.String `tfsdk:"name"`
	GPUProduct  types.String `tfsdk:"gpu_product"`
	Allocatable types.Int64  `tfsdk:"allocatable"`
	Requested   types.Int64  `tfsdk:"requested"`
	Free        types.Int64  `tfsdk:"free"`
	Ready       types.Bool   `tfsdk:"ready"`
	Schedulable types.Bool   `tfsdk:"schedulable"`
}

func (d *capacityDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_gpu_capacity"
}

func (d *capacityDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	total := func(desc string) schema.Int64Attribute {
		return schema.Int64Attribute{Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Where the GPUs are: allocatable, requested and free GPUs per node and in total, the largest " +
			"block of free GPUs on one node (the biggest single-node job that fits now) and the nodes with every GPU free. " +
			"Totals count Ready, uncordoned nodes; requests are those of pods that are not finished.",
		Attributes: map[string]schema.Attribute{
			"node_selector": schema.MapAttribute{ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Labels of the nodes to count; all nodes when unset.", Validators: []validator.Map{validators.Labels()}},
			"gpu_resource": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Extended resource name of the GPUs. Default `nvidia.com/gpu`.", Validators: []validator.String{validators.QualifiedName()}},
			"nodes": schema.ListNestedAttribute{Computed: true, MarkdownDescription: "Every matching node, sorted by name.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":        schema.StringAttribute{Computed: true, MarkdownDescription: "Node name."},
					"gpu_product": schema.StringAttribute{Computed: true, MarkdownDescription: "The node's `nvidia.com/gpu.product` label (set by GPU feature discovery); empty when the node has none."},
					"allocatable": schema.Int64Attribute{Computed: true, MarkdownDescription: "GPUs the node offers to pods (`status.allocatable` of `gpu_resource`), counted whether or not the node is Ready."},
					"requested":   schema.Int64Attribute{Computed: true, MarkdownDescription: "GPU requests of non-terminated pods bound to the node."},
					"free":        schema.Int64Attribute{Computed: true, MarkdownDescription: "`allocatable` − `requested`, never below 0."},
					"ready":       schema.BoolAttribute{Computed: true, MarkdownDescription: "The node's `Ready` condition is `True`. Only Ready, schedulable nodes count in the totals."},
					"schedulable": schema.BoolAttribute{Computed: true, MarkdownDescription: "Not cordoned."},
				}}},
			"allocatable_total":  total("Allocatable GPUs of the Ready, uncordoned matching nodes."),
			"requested_total":    total("GPUs requested on those nodes."),
			"free_total":         total("Free GPUs on those nodes."),
			"largest_free_block": total("Most free GPUs on one node."),
			"whole_free_nodes":   total("Nodes with every GPU free."),
		},
	}
}

func (d *capacityDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, _ *datasource.ConfigureResponse) {
	if c, ok := req.ProviderData.(*kube.Client); ok {
		d.client = c
	}
}

func (d *capacityDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m capacityModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if d.client == nil {
		resp.Diagnostics.AddError("Provider not configured", "the aiplatform provider has no cluster configuration")
		return
	}
	nodes, err := d.client.Nodes(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Cannot read the cluster's nodes", err.Error())
		return
	}
	pods, err := d.client.ActivePods(ctx)
	if err != nil {
		resp.Diagnostics.AddError("Cannot read the cluster's pods", err.Error())
		return
	}
	gpu := corev1.ResourceName(capacity.DefaultGPUResource)
	if !m.GPUResource.IsNull() {
		gpu = corev1.ResourceName(m.GPUResource.ValueString())
	}
	u := capacity.GPUUsage(nodes, pods, object.Labels(m.NodeSelector), gpu)
	m.Nodes = make([]nodeUsage, 0, len(u.Nodes))
	for _, n := range u.Nodes {
		m.Nodes = append(m.Nodes, nodeUsage{
			Name: types.StringValue(n.Name), GPUProduct: types.StringValue(n.Product),
			Allocatable: types.Int64Value(n.Allocatable), Requested: types.Int64Value(n.Requested), Free: types.Int64Value(n.Free),
			Ready: types.BoolValue(n.Ready), Schedulable: types.BoolValue(n.Schedulable),
		})
	}
	m.AllocatableTotal = types.Int64Value(u.AllocatableTotal)
	m.RequestedTotal = types.Int64Value(u.RequestedTotal)
	m.FreeTotal = types.Int64Value(u.FreeTotal)
	m.LargestFreeBlock = types.Int64Value(u.LargestFreeBlock)
	m.WholeFreeNodes = types.Int64Value(u.WholeFreeNodes)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
