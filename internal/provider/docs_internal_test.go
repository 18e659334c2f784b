package provider

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv/binaries"
)

// notImportable are resources whose ImportState refuses, with why; their
// docs say so instead of showing an import.
var notImportable = map[string]string{
	"aiplatform_nccl_check": "a check's result lives only in the state of the run that recorded it",
}

var (
	importCommand = regexp.MustCompile(`(?m)^terraform import (\S+) (\S+)$`)
	importBlock   = regexp.MustCompile(`import\s*\{\s*to\s*=\s*(\S+)\s*\n\s*id\s*=\s*"([^"]*)"\s*\}`)
	subcategory   = regexp.MustCompile(`(?m)^subcategory: "(.*)"$`)
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := binaries.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func resourceTypes(t *testing.T) (importable map[string]bool) {
	t.Helper()
	p := &aiplatform{}
	importable = map[string]bool{}
	for _, f := range p.Resources(context.Background()) {
		r := f()
		var md resource.MetadataResponse
		r.Metadata(context.Background(), resource.MetadataRequest{ProviderTypeName: "aiplatform"}, &md)
		_, ok := r.(resource.ResourceWithImportState)
		importable[md.TypeName] = ok
	}
	return importable
}

func dataSourceTypes() []string {
	p := &aiplatform{}
	var names []string
	for _, f := range p.DataSources(context.Background()) {
		var md datasource.MetadataResponse
		f().Metadata(context.Background(), datasource.MetadataRequest{ProviderTypeName: "aiplatform"}, &md)
		names = append(names, md.TypeName)
	}
	return names
}

type imp struct{ to, id string }

func matches(re *regexp.Regexp, b []byte) []imp {
	var out []imp
	for _, m := range re.FindAllSubmatch(b, -1) {
		out = append(out, imp{string(m[1]), string(m[2])})
	}
	return out
}

// Every importable resource shows both ways to import in its docs, the
// `import {}` block (examples/resources/<type>/import-by-string-id.tf,
// Terraform and OpenTofu ≥ 1.5) and the CLI command (import.sh), and the two
// import the same addresses by the same IDs. The acceptance tests import each
// example by its import.sh ID (examples/examples_test.go and the packages it
// names), so the block's ID is tested through it.
func TestImportExamples(t *testing.T) {
	root := repoRoot(t)
	for typeName, canImport := range resourceTypes(t) {
		t.Run(typeName, func(t *testing.T) {
			dir := filepath.Join(root, "examples", "resources", typeName)
			sh, shErr := os.ReadFile(filepath.Join(dir, "import.sh"))
			tf, tfErr := os.ReadFile(filepath.Join(dir, "import-by-string-id.tf"))
			page, err := os.ReadFile(filepath.Join(root, "docs", "resources", strings.TrimPrefix(typeName, "aiplatform_")+".md"))
			if err != nil {
				t.Fatalf("no docs page (run make generate): %v", err)
			}
			if reason, ok := notImportable[typeName]; ok || !canImport {
				if shErr == nil || tfErr == nil {
					t.Fatalf("cannot be imported (%s), yet %s has import.sh or import-by-string-id.tf", reason, dir)
				}
				return
			}
			if shErr != nil || tfErr != nil {
				t.Fatalf("an importable resource needs both examples/resources/%s/import.sh (terraform import ADDRESS ID) and import-by-string-id.tf (import { to = ADDRESS, id = \"ID\" }): %v %v", typeName, shErr, tfErr)
			}
			cmds, blocks := matches(importCommand, sh), matches(importBlock, tf)
			if len(cmds) == 0 {
				t.Fatalf("import.sh has no `terraform import ADDRESS ID` line")
			}
			if !slices.Equal(cmds, blocks) {
				t.Fatalf("import.sh imports %v, import-by-string-id.tf imports %v: they must agree", cmds, blocks)
			}
			for _, c := range cmds {
				if !strings.HasPrefix(c.to, typeName+".") {
					t.Errorf("import.sh imports %s, not a %s", c.to, typeName)
				}
			}
			// Both forms are on the page (a template of its own must render
			// .ImportIDConfigFile and .ImportFile, as the default does).
			for _, want := range []string{"```terraform\n", "\nimport {\n  to = " + cmds[0].to, "```shell\n", "\nterraform import " + cmds[0].to} {
				if !strings.Contains(string(page), want) {
					t.Errorf("docs/resources page lacks %q: regenerate (make generate), and render both .ImportIDConfigFile and .ImportFile in its template", strings.TrimSpace(want))
				}
			}
		})
	}
}

// Every resource and data source page belongs to a subcategory, the groups
// of the Registry's navigation: templates/resources.md.tmpl and
// templates/data-sources.md.tmpl map type names to them; a template of a
// resource's own sets it in its front matter.
func TestDocsSubcategories(t *testing.T) {
	root := repoRoot(t)
	pages := map[string]string{}
	for typeName := range resourceTypes(t) {
		pages[typeName] = filepath.Join("docs", "resources", strings.TrimPrefix(typeName, "aiplatform_")+".md")
	}
	for _, typeName := range dataSourceTypes() {
		pages["data "+typeName] = filepath.Join("docs", "data-sources", strings.TrimPrefix(typeName, "aiplatform_")+".md")
	}
	for name, page := range pages {
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Errorf("%s: no docs page (run make generate): %v", name, err)
			continue
		}
		m := subcategory.FindSubmatch(b)
		if m == nil || strings.TrimSpace(string(m[1])) == "" {
			t.Errorf("%s: %s has no subcategory: add the type name to a list in templates/resources.md.tmpl (or templates/data-sources.md.tmpl), or set it in its own template, then make generate", name, page)
		}
	}
}
