// Command floorprovider is the bench's second floor: the smallest
// terraform-plugin-framework provider (registry.terraform.io/aiplatform/floor)
// with one resource, floor_object, that stores its input as terraform_data
// does and talks to nothing. The same graph of floor_object resources costs
// what any framework provider pays per object — plugin process, gRPC,
// msgpack, the framework's value handling — without a cluster or any
// provider logic, so aiplatform's plan time can be split into the
// framework's share and its own.
package main

import (
	"context"
	"log"
	"strconv"
	"sync/atomic"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/telemetry"
)

func main() {
	telemetry.QuietSDKLogs() // as the aiplatform provider does
	err := providerserver.Serve(context.Background(), func() provider.Provider { return floor{} },
		providerserver.ServeOpts{Address: "registry.terraform.io/aiplatform/floor"})
	if err != nil {
		log.Fatal(err)
	}
}

type floor struct{}

func (floor) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "floor"
}

func (floor) Schema(context.Context, provider.SchemaRequest, *provider.SchemaResponse) {}

func (floor) Configure(context.Context, provider.ConfigureRequest, *provider.ConfigureResponse) {}

func (floor) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{func() resource.Resource { return object{} }}
}

func (floor) DataSources(context.Context) []func() datasource.DataSource { return nil }

// object is terraform_data's shape: an input of any type, kept as given.
type object struct{}

type model struct {
	ID    types.String  `tfsdk:"id"`
	Input types.Dynamic `tfsdk:"input"`
}

var ids atomic.Int64

func (object) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_object"
}

func (object) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{Attributes: map[string]schema.Attribute{
		"id": schema.StringAttribute{Computed: true,
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
		"input": schema.DynamicAttribute{Optional: true},
	}}
}

func (object) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	m.ID = types.StringValue(strconv.FormatInt(ids.Add(1), 10))
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (object) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m model
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (object) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m model
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (object) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {}
