package provider_test

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/provider"
)

// The docs (tfplugindocs) are generated from the schema: an attribute without
// a description is a bare name in the docs. Every attribute, nested attribute
// and block of the provider, of every resource and of every data source must
// say what it is. The schema is read as Terraform reads it (GetProviderSchema),
// so whatever a resource adds later — new attributes, nested objects,
// blocks — is held to the same rule.
func TestEveryAttributeIsDescribed(t *testing.T) {
	server := providerserver.NewProtocol6(provider.New("test")())()
	resp, err := server.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range resp.Diagnostics {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			t.Fatalf("GetProviderSchema: %s: %s", d.Summary, d.Detail)
		}
	}
	var missing []string
	add := func(path string) { missing = append(missing, path) }
	checkBlock(resp.Provider.Block, `provider "aiplatform"`, add, false)
	for name, s := range resp.ResourceSchemas {
		checkBlock(s.Block, `resource "`+name+`"`, add, true)
	}
	for name, s := range resp.DataSourceSchemas {
		checkBlock(s.Block, `data "`+name+`"`, add, false)
	}
	if len(resp.ResourceSchemas) == 0 || len(resp.DataSourceSchemas) == 0 {
		t.Fatalf("no resources (%d) or data sources (%d): the walk checked nothing", len(resp.ResourceSchemas), len(resp.DataSourceSchemas))
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%d without a description (set Description or MarkdownDescription; say units, defaults, what the provider checks):\n  %s",
			len(missing), strings.Join(missing, "\n  "))
	}
}

// checkBlock reports block itself (a resource, a data source, a nested block)
// and everything under it that has no description. A resource's `timeouts`
// block from terraform-plugin-framework-timeouts carries no description of
// its own (the package gives none); its create/update/delete attributes do,
// and are checked like any other.
func checkBlock(b *tfprotov6.SchemaBlock, path string, add func(string), resource bool) {
	if b == nil {
		return
	}
	if strings.TrimSpace(b.Description) == "" {
		add(path)
	}
	for _, a := range b.Attributes {
		checkAttribute(a, path+"."+a.Name, add)
	}
	for _, nb := range b.BlockTypes {
		if nb.Block == nil {
			continue
		}
		if resource && nb.TypeName == "timeouts" && isTimeouts(nb.Block) {
			for _, a := range nb.Block.Attributes {
				checkAttribute(a, path+".timeouts."+a.Name, add)
			}
			continue
		}
		checkBlock(nb.Block, path+"."+nb.TypeName, add, false)
	}
}

// isTimeouts: the block terraform-plugin-framework-timeouts builds, string
// attributes named after the operations and nothing else.
func isTimeouts(b *tfprotov6.SchemaBlock) bool {
	if len(b.BlockTypes) > 0 || len(b.Attributes) == 0 {
		return false
	}
	for _, a := range b.Attributes {
		switch a.Name {
		case "create", "read", "update", "delete":
		default:
			return false
		}
	}
	return true
}

func checkAttribute(a *tfprotov6.SchemaAttribute, path string, add func(string)) {
	if strings.TrimSpace(a.Description) == "" {
		add(path)
	}
	if a.NestedType != nil {
		for _, n := range a.NestedType.Attributes {
			checkAttribute(n, path+"."+n.Name, add)
		}
	}
}

// The walk itself: it finds what is missing at every depth, and lets a
// resource's timeouts block (described attributes, no block description)
// through — but not its attributes when they lack descriptions.
func TestDescriptionWalk(t *testing.T) {
	str := func(name, desc string) *tfprotov6.SchemaAttribute {
		return &tfprotov6.SchemaAttribute{Name: name, Description: desc, Optional: true}
	}
	res := &tfprotov6.SchemaBlock{
		Description: "r",
		Attributes: []*tfprotov6.SchemaAttribute{
			str("name", "n"),
			str("bare", ""),
			{Name: "obj", Description: "o", NestedType: &tfprotov6.SchemaObject{Attributes: []*tfprotov6.SchemaAttribute{str("inner", "")}}},
		},
		BlockTypes: []*tfprotov6.SchemaNestedBlock{
			{TypeName: "timeouts", Block: &tfprotov6.SchemaBlock{Attributes: []*tfprotov6.SchemaAttribute{str("create", "c"), str("delete", "")}}},
			{TypeName: "other", Block: &tfprotov6.SchemaBlock{Attributes: []*tfprotov6.SchemaAttribute{str("x", "x")}}},
		},
	}
	var got []string
	checkBlock(res, "r", func(p string) { got = append(got, p) }, true)
	sort.Strings(got)
	want := []string{"r.bare", "r.obj.inner", "r.other", "r.timeouts.delete"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("missing = %v, want %v", got, want)
	}
}
