// Command standin is a test stand-in for the source providers of a `moved`
// block (hashicorp/kubernetes, hashicorp/helm): Terraform refuses to plan a
// state that names a provider it cannot start, and tests cannot download the
// real ones. It serves only the schemas of kubernetes_manifest and
// helm_release — the parts of them a state move reads — under the provider
// type its file name gives (terraform-provider-<type>); every operation on
// its resources fails. Built by acctest.SourceProviders.
package main

import (
	"context"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func main() {
	name := strings.TrimPrefix(filepath.Base(os.Args[0]), "terraform-provider-")
	if err := providerserver.Serve(context.Background(), func() provider.Provider { return &standin{name: name} },
		providerserver.ServeOpts{Address: "registry.terraform.io/hashicorp/" + name}); err != nil {
		log.Fatal(err)
	}
}

type standin struct{ name string }

func (p *standin) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = p.name
}
func (p *standin) Schema(context.Context, provider.SchemaRequest, *provider.SchemaResponse) {}
func (p *standin) Configure(context.Context, provider.ConfigureRequest, *provider.ConfigureResponse) {
}
func (p *standin) DataSources(context.Context) []func() datasource.DataSource { return nil }
func (p *standin) Resources(context.Context) []func() resource.Resource {
	switch p.name {
	case "kubernetes":
		return []func() resource.Resource{func() resource.Resource {
			return &res{typ: "manifest", version: 1, attrs: map[string]schema.Attribute{
				"manifest":        schema.DynamicAttribute{Required: true},
				"object":          schema.DynamicAttribute{Optional: true, Computed: true},
				"computed_fields": schema.ListAttribute{ElementType: types.StringType, Optional: true},
			}}
		}}
	case "helm":
		return []func() resource.Resource{func() resource.Resource {
			return &res{typ: "release", attrs: map[string]schema.Attribute{
				"id":         schema.StringAttribute{Computed: true},
				"name":       schema.StringAttribute{Required: true},
				"namespace":  schema.StringAttribute{Optional: true, Computed: true},
				"repository": schema.StringAttribute{Optional: true},
				"chart":      schema.StringAttribute{Required: true},
				"version":    schema.StringAttribute{Optional: true, Computed: true},
				"values":     schema.ListAttribute{ElementType: types.StringType, Optional: true},
				"status":     schema.StringAttribute{Computed: true},
			}}
		}}
	}
	return nil
}

type res struct {
	typ     string
	version int64
	attrs   map[string]schema.Attribute
}

func (r *res) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_" + r.typ
}
func (r *res) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{Version: r.version, Attributes: r.attrs}
}
func (r *res) Create(_ context.Context, _ resource.CreateRequest, resp *resource.CreateResponse) {
	resp.Diagnostics.AddError("stand-in", "the stand-in source provider cannot create")
}
func (r *res) Read(_ context.Context, _ resource.ReadRequest, resp *resource.ReadResponse) {
	resp.Diagnostics.AddError("stand-in", "the stand-in source provider cannot read")
}
func (r *res) Update(_ context.Context, _ resource.UpdateRequest, resp *resource.UpdateResponse) {
	resp.Diagnostics.AddError("stand-in", "the stand-in source provider cannot update")
}
func (r *res) Delete(_ context.Context, _ resource.DeleteRequest, resp *resource.DeleteResponse) {
	resp.Diagnostics.AddError("stand-in", "the stand-in source provider cannot delete")
}
