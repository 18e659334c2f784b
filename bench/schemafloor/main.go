// Command schemafloor is the bench's third floor: a terraform-plugin-framework
// provider with aiplatform's own schemas — its provider block, every
// resource's and data source's attributes, validators and plan modifiers —
// and none of its logic: no cluster, no plan-time checks (ModifyPlan,
// ValidateConfig), no reads. Create stores the plan (unknown computed values
// as null), Read keeps the state as the framework hands it over, Delete does
// nothing. Served as registry.terraform.io/aiplatform/schemafloor, it runs
// the same configuration as the aiplatform workspace with only the
// provider's source changed, so a plan's time splits into what the
// framework pays for these schemas and what the provider adds.
package main

import (
	"context"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	aiplatform "github.com/aiplatform/terraform-provider-aiplatform/internal/provider"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/telemetry"
)

func main() {
	telemetry.QuietSDKLogs() // as the aiplatform provider does
	err := providerserver.Serve(context.Background(), func() provider.Provider { return floor{aiplatform.New("schemafloor")()} },
		providerserver.ServeOpts{Address: "registry.terraform.io/aiplatform/schemafloor"})
	if err != nil {
		log.Fatal(err)
	}
}

// floor is aiplatform's provider with its Configure, resources and data
// sources replaced.
type floor struct{ inner provider.Provider }

func (f floor) Metadata(ctx context.Context, req provider.MetadataRequest, resp *provider.MetadataResponse) {
	f.inner.Metadata(ctx, req, resp)
}

func (f floor) Schema(ctx context.Context, req provider.SchemaRequest, resp *provider.SchemaResponse) {
	f.inner.Schema(ctx, req, resp)
}

func (floor) Configure(context.Context, provider.ConfigureRequest, *provider.ConfigureResponse) {}

func (f floor) Resources(ctx context.Context) []func() resource.Resource {
	var out []func() resource.Resource
	for _, newResource := range f.inner.Resources(ctx) {
		out = append(out, func() resource.Resource { return object{newResource()} })
	}
	return out
}

func (f floor) DataSources(ctx context.Context) []func() datasource.DataSource {
	var out []func() datasource.DataSource
	for _, newDataSource := range f.inner.DataSources(ctx) {
		out = append(out, func() datasource.DataSource { return reading{newDataSource()} })
	}
	return out
}

// object has an aiplatform resource's type name and schema, and stores
// what it is given.
type object struct{ inner resource.Resource }

func (o object) Metadata(ctx context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	o.inner.Metadata(ctx, req, resp)
}

func (o object) Schema(ctx context.Context, req resource.SchemaRequest, resp *resource.SchemaResponse) {
	o.inner.Schema(ctx, req, resp)
}

func (object) Create(_ context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	resp.State.Raw = known(req.Plan.Raw)
}

func (object) Read(context.Context, resource.ReadRequest, *resource.ReadResponse) {}

func (object) Update(_ context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	resp.State.Raw = known(req.Plan.Raw)
}

func (object) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {}

// reading has an aiplatform data source's type name and schema, and
// returns its configuration.
type reading struct{ inner datasource.DataSource }

func (r reading) Metadata(ctx context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	r.inner.Metadata(ctx, req, resp)
}

func (r reading) Schema(ctx context.Context, req datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	r.inner.Schema(ctx, req, resp)
}

func (reading) Read(_ context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	resp.State.Raw = known(req.Config.Raw)
}

// known is v with every unknown value null, as an apply must leave it.
func known(v tftypes.Value) tftypes.Value {
	out, _ := tftypes.Transform(v, func(_ *tftypes.AttributePath, v tftypes.Value) (tftypes.Value, error) {
		if !v.IsKnown() {
			return tftypes.NewValue(v.Type(), nil), nil
		}
		return v, nil
	})
	return out
}
