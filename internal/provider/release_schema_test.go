package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/provider"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// acctest.ReleaseSchemaDir holds the resource schemas of each released
// version, one file per tag (v0.1.0.json), written when the release is
// tagged:
//
//	WRITE_RELEASE_SCHEMA=v0.1.0 go test -run TestSchemaAgainstRelease ./internal/provider/

// releasedSchema is what a release's state holds per resource type: the
// schema version and every attribute and block, by dotted path, as its type
// and flags ("string optional computed").
type releasedSchema struct {
	Release   string                      `json:"release"`
	Commit    string                      `json:"commit"` // the tag's commit: acctest.Release builds its provider from it
	Resources map[string]releasedResource `json:"resources"`
}

type releasedResource struct {
	Version    int64             `json:"version"`
	Attributes map[string]string `json:"attributes"`
}

// State written by the last release must keep working under HEAD, and a
// configuration written for it must keep planning (issue #29, item 5). Held
// against the newest file of acctest.ReleaseSchemaDir, every resource type of the
// release must still exist, and:
//   - an attribute removed, or whose type changed, breaks the state that
//     holds it: the resource's schema version must be above the release's,
//     with a state upgrader from the release's version (UpgradeState);
//   - an attribute that became required, or a new required one, breaks
//     configurations: the CHANGELOG's section above the release says so
//     under BREAKING CHANGES, naming the resource;
//   - any other change (attributes added, flags changed) is named in that
//     section too.
func TestSchemaAgainstRelease(t *testing.T) {
	ctx := context.Background()
	now := currentSchemas(t)
	if tag := os.Getenv("WRITE_RELEASE_SCHEMA"); tag != "" {
		writeRelease(t, tag, now)
		return
	}
	rel, file := newestRelease(t)
	changelog, err := os.ReadFile(filepath.Join("..", "..", "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	unreleased := sinceRelease(t, string(changelog), rel.Release)
	for _, problem := range judge(rel.Release, rel.Resources, now, stateUpgraders(ctx, t), unreleased) {
		t.Errorf("%s (against %s)", problem, file)
	}
}

// judge applies the rules of TestSchemaAgainstRelease: the schemas of
// release, those of HEAD, HEAD's state upgraders (by resource type, the
// versions they upgrade from) and the CHANGELOG's section above the release.
func judge(release string, released, now map[string]releasedResource, upgraders map[string][]int64, unreleased changelogSection) []string {
	var problems []string
	for _, name := range sortedNames(released) {
		was := released[name]
		is, ok := now[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s is gone: every state holding it stops working; deprecate it and keep it until the next major version", name))
			continue
		}
		var stateBreaks, configBreaks, other []string
		for _, path := range sortedNames(was.Attributes) {
			before := was.Attributes[path]
			after, found := is.Attributes[path]
			switch {
			case !found:
				stateBreaks = append(stateBreaks, path+" removed")
			case kind(after) != kind(before):
				stateBreaks = append(stateBreaks, fmt.Sprintf("%s: %s → %s", path, kind(before), kind(after)))
			case required(after) && !required(before):
				configBreaks = append(configBreaks, path+" became required")
			case after != before:
				other = append(other, fmt.Sprintf("%s: %s → %s", path, before, after))
			}
		}
		for _, path := range sortedNames(is.Attributes) {
			if _, found := was.Attributes[path]; found {
				continue
			}
			if required(is.Attributes[path]) {
				configBreaks = append(configBreaks, path+" added, required")
			} else {
				other = append(other, path+" added")
			}
		}
		if len(stateBreaks) > 0 {
			if is.Version <= was.Version {
				problems = append(problems, fmt.Sprintf("%s: %s break the state %s wrote: raise the schema's Version above %d and add a state upgrader from version %d",
					name, strings.Join(stateBreaks, "; "), release, was.Version, was.Version))
			} else if !slices.Contains(upgraders[name], was.Version) {
				problems = append(problems, fmt.Sprintf("%s: schema version %d, but no state upgrader from version %d (the release's): %s",
					name, is.Version, was.Version, strings.Join(stateBreaks, "; ")))
			}
		}
		if len(configBreaks) > 0 && !mentions(unreleased.breaking, name) {
			problems = append(problems, fmt.Sprintf("%s: %s break configurations written for %s: say so under BREAKING CHANGES in the CHANGELOG's section above %s",
				name, strings.Join(configBreaks, "; "), release, release))
		}
		if all := slices.Concat(stateBreaks, configBreaks, other); len(all) > 0 && !mentions(unreleased.all, name) {
			problems = append(problems, fmt.Sprintf("%s changed since %s (%s): name it in the CHANGELOG's section above %s",
				name, release, strings.Join(all, "; "), release))
		}
	}
	return problems
}

// The rules, against a release whose schema differs from HEAD's: each
// kind of break is reported until what it asks for is there, and nothing
// is reported for an unchanged resource.
func TestJudgeFindsBreaks(t *testing.T) {
	was := map[string]releasedResource{
		"aiplatform_a": {Version: 0, Attributes: map[string]string{"name": "string required", "size": "number optional"}},
		"aiplatform_b": {Version: 0, Attributes: map[string]string{"name": "string required"}},
		"aiplatform_c": {Version: 1, Attributes: map[string]string{"name": "string required"}},
		"aiplatform_d": {Version: 0, Attributes: map[string]string{"name": "string required"}},
	}
	now := map[string]releasedResource{
		"aiplatform_a": {Version: 0, Attributes: map[string]string{"name": "string required", "size": "string optional"}},
		"aiplatform_b": {Version: 0, Attributes: map[string]string{"name": "string required", "zone": "string required"}},
		"aiplatform_c": {Version: 1, Attributes: map[string]string{"name": "string required"}},
	}
	got := strings.Join(judge("v0.1.0", was, now, nil, changelogSection{}), "\n")
	for _, want := range []string{
		"aiplatform_a: size: number → string break the state v0.1.0 wrote: raise the schema's Version above 0",
		"aiplatform_a changed since v0.1.0",
		"aiplatform_b: zone added, required break configurations",
		"aiplatform_d is gone",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "aiplatform_c") {
		t.Errorf("an unchanged resource is reported:\n%s", got)
	}
	// What the reports ask for: a version bump with an upgrader, and the
	// CHANGELOG lines.
	now["aiplatform_a"] = releasedResource{Version: 1, Attributes: now["aiplatform_a"].Attributes}
	now["aiplatform_d"] = was["aiplatform_d"]
	sec := changelogSection{all: "- aiplatform_a: size is a string\nBREAKING CHANGES\n- aiplatform_b needs zone", breaking: "BREAKING CHANGES\n- aiplatform_b needs zone"}
	if got := judge("v0.1.0", was, now, nil, sec); len(got) != 1 || !strings.Contains(got[0], "no state upgrader from version 0") {
		t.Errorf("with the version raised but no upgrader: %q", got)
	}
	if got := judge("v0.1.0", was, now, map[string][]int64{"aiplatform_a": {0}}, sec); len(got) != 0 {
		t.Errorf("with everything asked for: %q", got)
	}
}

// currentSchemas are HEAD's resource schemas, read as Terraform reads them.
func currentSchemas(t *testing.T) map[string]releasedResource {
	t.Helper()
	server := providerserver.NewProtocol6(provider.New("test")())()
	resp, err := server.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]releasedResource{}
	for name, s := range resp.ResourceSchemas {
		attrs := map[string]string{}
		flattenBlock(s.Block, "", attrs)
		out[name] = releasedResource{Version: s.Version, Attributes: attrs}
	}
	if len(out) == 0 {
		t.Fatal("no resource schemas: nothing would be checked")
	}
	return out
}

func flattenBlock(b *tfprotov6.SchemaBlock, prefix string, into map[string]string) {
	if b == nil {
		return
	}
	for _, a := range b.Attributes {
		path := prefix + a.Name
		if a.NestedType != nil {
			into[path] = attributeString(a, "nested "+a.NestedType.Nesting.String())
			for _, n := range a.NestedType.Attributes {
				flattenAttribute(n, path+".", into)
			}
			continue
		}
		into[path] = attributeString(a, a.Type.String())
	}
	for _, nb := range b.BlockTypes {
		into[prefix+nb.TypeName] = "block " + nb.Nesting.String()
		flattenBlock(nb.Block, prefix+nb.TypeName+".", into)
	}
}

func flattenAttribute(a *tfprotov6.SchemaAttribute, prefix string, into map[string]string) {
	flattenBlock(&tfprotov6.SchemaBlock{Attributes: []*tfprotov6.SchemaAttribute{a}}, prefix, into)
}

// attributeString is an attribute's type and flags.
func attributeString(a *tfprotov6.SchemaAttribute, typ string) string {
	s := typ
	for _, f := range []struct {
		on   bool
		name string
	}{{a.Required, "required"}, {a.Optional, "optional"}, {a.Computed, "computed"}, {a.Sensitive, "sensitive"}} {
		if f.on {
			s += " " + f.name
		}
	}
	return s
}

var flags = regexp.MustCompile(`( (required|optional|computed|sensitive))+$`)

func kind(s string) string   { return flags.ReplaceAllString(s, "") }
func required(s string) bool { return strings.Contains(flags.FindString(s), " required") }

// stateUpgraders are the schema versions each resource type upgrades state
// from.
func stateUpgraders(ctx context.Context, t *testing.T) map[string][]int64 {
	t.Helper()
	p := provider.New("test")()
	out := map[string][]int64{}
	for _, newResource := range p.Resources(ctx) {
		r := newResource()
		var md fwresource.MetadataResponse
		r.Metadata(ctx, fwresource.MetadataRequest{ProviderTypeName: "aiplatform"}, &md)
		if u, ok := r.(fwresource.ResourceWithUpgradeState); ok {
			for v := range u.UpgradeState(ctx) {
				out[md.TypeName] = append(out[md.TypeName], v)
			}
		}
	}
	return out
}

// changelogSection is the CHANGELOG's text above a release's heading: all
// of it, and its BREAKING CHANGES part.
type changelogSection struct{ all, breaking string }

func sinceRelease(t *testing.T, changelog, release string) changelogSection {
	t.Helper()
	heading := regexp.MustCompile(`(?m)^## ` + regexp.QuoteMeta(strings.TrimPrefix(release, "v")) + `\b`)
	loc := heading.FindStringIndex(changelog)
	if loc == nil {
		t.Fatalf("CHANGELOG.md has no heading for release %s (## %s)", release, strings.TrimPrefix(release, "v"))
	}
	sec := changelogSection{all: changelog[:loc[0]]}
	if i := strings.Index(sec.all, "BREAKING CHANGES"); i >= 0 {
		sec.breaking = sec.all[i:]
		if j := strings.Index(sec.breaking[1:], "\n## "); j >= 0 {
			sec.breaking = sec.breaking[:j+1]
		}
	}
	return sec
}

func mentions(text, resource string) bool {
	return regexp.MustCompile(`\b` + regexp.QuoteMeta(resource) + `\b`).MatchString(text)
}

// newestRelease is the newest release's schema and its file
// (acctest.LastRelease).
func newestRelease(t *testing.T) (releasedSchema, string) {
	t.Helper()
	file := acctest.LastRelease(t).File
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rel releasedSchema
	if err := json.Unmarshal(data, &rel); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if len(rel.Resources) == 0 {
		t.Fatalf("%s holds no resources", file)
	}
	return rel, file
}

func writeRelease(t *testing.T, tag string, now map[string]releasedResource) {
	t.Helper()
	if _, err := semver.NewVersion(tag); err != nil || !strings.HasPrefix(tag, "v") {
		t.Fatalf("WRITE_RELEASE_SCHEMA=%q: want a tag like v0.1.0", tag)
	}
	commit, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("the release's commit: %v", err)
	}
	data, err := json.MarshalIndent(releasedSchema{Release: tag, Commit: strings.TrimSpace(string(commit)), Resources: now}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, filepath.FromSlash(acctest.ReleaseSchemaDir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, tag+".json")
	if err := os.WriteFile(file, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: %d resource types", file, len(now))
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
