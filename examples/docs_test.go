package examples_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/acctest"
	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// Every code block of docs/ runs in a test (issue #28). Each block of each
// page gets one of these dispositions, and a block that gets none fails
// TestDocsBlocksAccountedFor:
//
//   - planned here (TestAccDocsBlocksPlan): every ```terraform / ```hcl block
//     of a page that is not marked otherwise, resource and data source pages'
//     examples included — also those appliedElsewhere applies on a cluster
//     with the controllers they need, unless notPlannedHere says why this
//     cluster cannot plan them;
//   - a scenario a guide shows (examples/<dir>/main.tf): planned here, and
//     applied, planned empty and destroyed by the test scenarioAppliedBy
//     names (checked: the test exists and names the directory);
//   - an import example of a resource page (the `import {}` block and the
//     `terraform import` command): the import step of the test that applies
//     the page's example imports by import.sh's ID, and
//     internal/provider's TestImportExamples holds the two forms equal;
//   - `<!-- run by: DIR TestName -->` right before the block (in its
//     template): the test TestName of the package in DIR (from the repo
//     root) runs it, and that package's tests read the page (they name its
//     file): checked here;
//   - `> Not run by the tests: why` right before the block: the doc says,
//     where its readers see it, why it cannot run (a fragment, placeholders
//     of the reader's machine);
//   - a block with no language or ```text: a formula or a program's output,
//     unless it holds an HCL block or a Kubernetes object (then it fails).
//
// Nothing else is skipped: an unmarked block in another language fails, an
// unmarked HCL block that does not plan fails.

var (
	fence     = regexp.MustCompile("(?m)^```([A-Za-z0-9_-]*)\n")
	notRun    = regexp.MustCompile(`^>\s*Not run by the tests:\s*(\S.*?)\s*$`)
	runBy     = regexp.MustCompile(`^<!--\s*run by:\s*(\S+)\s+(Test\w+)\s*-->$`)
	anyMarker = regexp.MustCompile(`^(<!--\s*(not run|run by)\b|>\s*Not run by the tests:)`)
	// hiddenCode is configuration in a block tagged as text: a top-level
	// HCL block or a Kubernetes object.
	hiddenCode = regexp.MustCompile(`(?m)^((resource|data|module|provider|terraform|import|moved|removed)\b[^\n]*\{$|apiVersion:.*$)`)
)

// docBlock is one fenced code block of a page of docs/.
type docBlock struct {
	Page   string // relative to docs/, slash-separated
	Line   int    // of the opening fence
	Lang   string
	Body   string
	Marker string // the HTML comment on the last non-blank line before the fence, if any
}

func (b docBlock) String() string { return fmt.Sprintf("docs/%s:%d (```%s)", b.Page, b.Line, b.Lang) }

// docBlocks reads every block of every page of docs/.
func docBlocks(t *testing.T) []docBlock {
	t.Helper()
	root := repoRoot(t)
	var pages []string
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages = append(pages, p)
		}
		return err
	})
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages under docs/ (run make generate): %v", err)
	}
	sort.Strings(pages)
	var blocks []docBlock
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		rel, _ := filepath.Rel(filepath.Join(root, "docs"), p)
		pos := 0
		for {
			loc := fence.FindStringSubmatchIndex(text[pos:])
			if loc == nil {
				break
			}
			start, bodyStart := pos+loc[0], pos+loc[1]
			end := strings.Index(text[bodyStart:], "\n```")
			if end < 0 && strings.HasPrefix(text[bodyStart:], "```") {
				end = -1 // an empty block
			}
			if end < 0 && !strings.HasPrefix(text[bodyStart:], "```") {
				t.Fatalf("docs/%s:%d: a code block is never closed", filepath.ToSlash(rel), strings.Count(text[:start], "\n")+1)
			}
			body := ""
			if end >= 0 {
				body = text[bodyStart : bodyStart+end+1]
			}
			blocks = append(blocks, docBlock{
				Page: filepath.ToSlash(rel), Line: strings.Count(text[:start], "\n") + 1,
				Lang: text[pos+loc[2] : pos+loc[3]], Body: body, Marker: markerBefore(text[:start]),
			})
			pos = bodyStart + len(body) + len("```")
			if pos > len(text) {
				break
			}
		}
	}
	return blocks
}

// markerBefore is the last non-blank line of text when it is a docs-run
// marker comment.
func markerBefore(text string) string {
	lines := strings.Split(strings.TrimRight(text, " \n"), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if anyMarker.MatchString(last) {
		return last
	}
	return ""
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// disposition of a block: what runs it.
type disposition struct {
	Plan      bool   // planned by TestAccDocsBlocksPlan
	Elsewhere string // the test that runs it, when not here
	NotRun    string // why it cannot run
}

// exampleFile is the examples/ file a resource or data source page shows,
// by the page and the block's text, if it is one.
func exampleFile(t *testing.T, b docBlock) (typeName, file string) {
	t.Helper()
	dir, page, ok := strings.Cut(b.Page, "/")
	if !ok || (dir != "resources" && dir != "data-sources") {
		return "", ""
	}
	typeName = "aiplatform_" + strings.TrimSuffix(page, ".md")
	for _, name := range []string{"resource.tf", "data-source.tf", "import-by-string-id.tf", "import.sh"} {
		src, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", dir, typeName, name))
		if err == nil && strings.TrimSpace(string(src)) == strings.TrimSpace(b.Body) {
			return typeName, name
		}
	}
	return typeName, ""
}

func classify(t *testing.T, b docBlock) (disposition, error) {
	t.Helper()
	if m := notRun.FindStringSubmatch(b.Marker); m != nil {
		return disposition{NotRun: m[1]}, nil
	}
	if m := runBy.FindStringSubmatch(b.Marker); m != nil {
		return disposition{Elsewhere: m[1] + " " + m[2]}, checkRunBy(t, b, m[1], m[2])
	}
	if b.Marker != "" {
		return disposition{}, fmt.Errorf("%s: marker %q is neither \"> Not run by the tests: why\" nor <!-- run by: DIR TestName -->", b, b.Marker)
	}
	typeName, file := exampleFile(t, b)
	switch file {
	case "import-by-string-id.tf", "import.sh":
		test := "examples TestAccResourceExamples"
		if reason, ok := appliedElsewhere[typeName]; ok {
			test = reason
		}
		return disposition{Elsewhere: "the import step of " + test + "; internal/provider TestImportExamples"}, nil
	case "resource.tf":
		// Applied elsewhere, planned here too, but where planning needs
		// what this cluster lacks.
		if reason, ok := notPlannedHere[typeName]; ok {
			return disposition{Elsewhere: appliedElsewhere[typeName] + " (not planned here: " + reason + ")"}, nil
		}
	}
	if dir := scenarioDir(t, b); dir != "" {
		test, ok := scenarioAppliedBy[dir]
		if !ok {
			return disposition{}, fmt.Errorf("%s shows examples/%s/main.tf, which scenarioAppliedBy does not name a test applying", b, dir)
		}
		pkg, name, _ := strings.Cut(test, " ")
		return disposition{Plan: true, Elsewhere: "applied and destroyed by " + test}, checkNames(t, b, pkg, name, `"`+dir+`"`)
	}
	if b.Lang == "terraform" || b.Lang == "hcl" {
		return disposition{Plan: true}, nil
	}
	if b.Lang == "" || b.Lang == "text" {
		if m := hiddenCode.FindString(b.Body); m != "" {
			return disposition{}, fmt.Errorf("%s has no language (or text) but holds configuration (%q): tag it ```terraform or ```yaml so that it runs, or mark it", b, m)
		}
		return disposition{NotRun: "a formula or a program's output, not code"}, nil
	}
	return disposition{}, fmt.Errorf("%s is not run by any test: mark it in its template (templates/ or examples/) with "+
		"<!-- run by: DIR TestName --> (a test that runs it and reads the page) or \"> Not run by the tests: why\" right before it", b)
}

// scenarioAppliedBy: the test that applies each scenario a guide shows
// (examples/<dir>/main.tf, by tffile), plans it empty and destroys it.
var scenarioAppliedBy = map[string]string{
	"getting-started": "examples/rbac TestAccExamplesWithLeastPrivilege",
	"serving-70b":     "examples/rbac/serving TestAccServingWithLeastPrivilege",
}

// scenarioDir is the directory of examples/ whose main.tf the block is.
func scenarioDir(t *testing.T, b docBlock) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(repoRoot(t), "examples", "*", "main.tf"))
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err == nil && strings.TrimSpace(string(src)) == strings.TrimSpace(b.Body) {
			return filepath.Base(filepath.Dir(f))
		}
	}
	return ""
}

// checkRunBy: the package in dir has the test, and its tests read the page.
func checkRunBy(t *testing.T, b docBlock, dir, test string) error {
	t.Helper()
	return checkNames(t, b, dir, test, filepath.Base(b.Page))
}

// checkNames: the package in dir has the test, and its tests name what.
func checkNames(t *testing.T, b docBlock, dir, test, what string) error {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(repoRoot(t), filepath.FromSlash(dir), "*_test.go"))
	hasTest, readsPage := false, false
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		hasTest = hasTest || strings.Contains(string(src), "func "+test+"(t *testing.T)")
		readsPage = readsPage || strings.Contains(string(src), what)
	}
	switch {
	case !hasTest:
		return fmt.Errorf("%s says it is run by %s %s: no such test in %s", b, dir, test, dir)
	case !readsPage:
		return fmt.Errorf("%s says it is run by %s %s, but no test of %s names %s", b, dir, test, dir, what)
	}
	return nil
}

// Every block of every page is run by a test or says why it cannot run.
func TestDocsBlocksAccountedFor(t *testing.T) {
	blocks := docBlocks(t)
	counts := map[string]int{}
	for _, b := range blocks {
		d, err := classify(t, b)
		switch {
		case err != nil:
			t.Error(err)
		case d.Plan:
			counts["planned"]++
		case d.Elsewhere != "":
			counts["run elsewhere"]++
		default:
			counts["not run"]++
		}
	}
	t.Logf("%d blocks: %v", len(blocks), counts)
	if counts["planned"] == 0 {
		t.Fatal("no block is planned: the docs-run test would prove nothing")
	}
}

// notPlannedHere are the resource pages' examples this package's cluster
// cannot plan; appliedElsewhere names the test that applies each.
var notPlannedHere = map[string]string{
	"aiplatform_training_runtime": "its plan refuses a Kueue without the trainer.kubeflow.org/trainjob integration, which this cluster's Kueue does not have",
}

// moduleArgs are the arguments a page's block needs as a module: its
// variables without defaults.
var moduleArgs = map[string]string{
	// A worker's kubeconfig: this cluster's own stands in for it.
	"resources/multikueue_cluster.md": "worker_kubeconfig = file(var.kubeconfig)",
}

// substitutions make a block run on the test cluster where the doc names
// something of the reader's machine; each is said in the doc beside it.
func substitutions(t *testing.T, env *testenv.Env) map[string][][2]string {
	lws := moduleDir(t, "sigs.k8s.io/lws", "v0.9.0")
	mpi := moduleDir(t, "github.com/kubeflow/mpi-operator", "v0.8.2")
	return map[string][][2]string{
		"resources/lws_controller.md": {{"/path/to/lws@v0.9.0/charts/lws", filepath.Join(lws, "charts", "lws")}},
		// The example's comment: "offline, set manifests = { path = … }".
		"resources/mpi_operator.md": {{"  version = \"v0.8.2\"\n", fmt.Sprintf("  version   = \"v0.8.2\"\n  manifests = { path = %q }\n", filepath.Join(mpi, "deploy", "v2beta1", "mpi-operator.yaml"))}},
	}
}

// moduleDir is where the Go module cache holds module@version.
func moduleDir(t *testing.T, module, version string) string {
	t.Helper()
	dir, err := testenv.ModuleDir(context.Background(), module, version)
	if err != nil {
		t.Fatalf("module %s: %v", module, err)
	}
	return dir
}

// The HCL blocks that run here, each as a module of one configuration,
// planned in one `terraform plan` on the package's cluster (Kueue, H100 and
// A100 nodes). A failing plan is planned again block by block so that the
// error names each failing block.
func TestAccDocsBlocksPlan(t *testing.T) {
	env := acctest.Env(t)
	subs := substitutions(t, env)
	var planned []docBlock
	used := map[string]bool{}
	for _, b := range docBlocks(t) {
		if d, err := classify(t, b); err == nil && d.Plan {
			for _, s := range subs[b.Page] {
				if strings.Contains(b.Body, s[0]) {
					used[s[0]] = true
				}
				b.Body = strings.ReplaceAll(b.Body, s[0], s[1])
			}
			planned = append(planned, b)
		}
	}
	if len(planned) == 0 {
		t.Fatal("no block to plan")
	}
	for page, list := range subs {
		for _, s := range list {
			if !used[s[0]] {
				t.Errorf("docs/%s: no planned block holds %q any more: update substitutions", page, s[0])
			}
		}
	}
	checkFmt(t, planned)
	out, err := planModules(t, env, planned)
	if err == nil {
		// Each block plans something: its resources to create, or its data
		// sources read at plan.
		for _, b := range planned {
			addr := "module." + moduleName(b) + "."
			if !strings.Contains(out, "# "+addr) && !strings.Contains(out, addr+"data.") {
				t.Errorf("%s planned, but the plan shows none of its resources to create nor a data source read (%s…):\n%s", b, addr, out)
			}
		}
		t.Logf("planned %d blocks in one plan: %s", len(planned), planLine.FindString(out))
		return
	}
	t.Errorf("the plan of the %d blocks failed: %v", len(planned), err)
	for _, b := range planned {
		if _, err := planModules(t, env, []docBlock{b}); err != nil {
			t.Errorf("%s does not plan:\n%s\n%v", b, b.Body, err)
		}
	}
}

// checkFmt: each block is as `terraform fmt` writes it (as `make lint`
// holds examples/ to).
func checkFmt(t *testing.T, blocks []docBlock) {
	t.Helper()
	dir := t.TempDir()
	byFile := map[string]docBlock{}
	for _, b := range blocks {
		name := moduleName(b) + ".tf"
		byFile[name] = b
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.Body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(acctest.Terraform(t).Path, "fmt", "-check", "-list=true", "-no-color", dir).Output()
	for _, f := range strings.Fields(string(out)) {
		t.Errorf("%s is not as terraform fmt writes it: run terraform fmt on its source in examples/ or templates/", byFile[filepath.Base(f)])
	}
	if err != nil && len(out) == 0 {
		t.Errorf("terraform fmt -check: %v", err)
	}
}

// providerOnly is the root module's provider, for the test cluster.
const providerOnly = acctest.RequiredProviders + "\nvariable \"kubeconfig\" {\n  type = string\n}\n\nprovider \"aiplatform\" {\n  config_path = var.kubeconfig\n}\n"

func moduleName(b docBlock) string {
	return strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(strings.TrimSuffix(b.Page, ".md")) + fmt.Sprintf("_line%d", b.Line)
}

// planModules writes each block into a module of a new workspace and plans.
func planModules(t *testing.T, env *testenv.Env, blocks []docBlock) (string, error) {
	t.Helper()
	src := t.TempDir()
	root := providerOnly
	for _, b := range blocks {
		// A scenario of its own (a guide's main.tf) takes the cluster's
		// kubeconfig as its variable, as `-var kubeconfig=…` gives it.
		args := ""
		if strings.Contains(b.Body, `variable "kubeconfig"`) {
			args = "  kubeconfig = var.kubeconfig\n"
		}
		if a, ok := moduleArgs[b.Page]; ok {
			args += "  " + a + "\n"
		}
		root += fmt.Sprintf("\n# %s\nmodule %q {\n  source = \"./%s\"\n%s}\n", b, moduleName(b), moduleName(b), args)
	}
	if err := os.WriteFile(filepath.Join(src, "main.tf"), []byte(root), 0o644); err != nil {
		t.Fatal(err)
	}
	w := acctest.NewWorkspace(t, env, src)
	for _, b := range blocks {
		dir := filepath.Join(w.Dir(), moduleName(b))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		body := b.Body
		if !strings.Contains(body, "required_providers") {
			if err := os.WriteFile(filepath.Join(dir, "versions.tf"), []byte(acctest.RequiredProviders), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// `get` installs the local modules; `init` would look the provider up
	// in the registry, which the workspace's dev_overrides make needless.
	get := exec.Command(w.CLI().Path, "-chdir="+w.Dir(), "get", "-no-color")
	get.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+filepath.Join(w.Dir(), "terraformrc"))
	if out, err := get.CombinedOutput(); err != nil {
		return string(out), fmt.Errorf("%s get: %w\n%s", w.CLI().Name, err, out)
	}
	out, err := w.Run("plan")
	// Nothing was applied: leave the cleanup's destroy a configuration
	// without the blocks (a block that does not plan would fail it too).
	if werr := os.WriteFile(filepath.Join(w.Dir(), "main.tf"), []byte(providerOnly), 0o644); werr != nil {
		t.Fatal(werr)
	}
	return out, err
}

var planLine = regexp.MustCompile(`(?m)^Plan: .*$`)

// The rules themselves: what passes for run, and what fails.
func TestDocsBlockRules(t *testing.T) {
	page := func(lang, body, marker string) docBlock {
		return docBlock{Page: "guides/training-survives-preemption.md", Line: 1, Lang: lang, Body: body, Marker: markerBefore("text\n" + marker + "\n\n")}
	}
	for _, c := range []struct {
		name    string
		block   docBlock
		wantErr string
		want    disposition
	}{
		{"an unmarked yaml block fails", page("yaml", "kind: TrainJob\n", ""), "is not run by any test", disposition{}},
		{"an unmarked shell block fails", page("sh", "kubectl apply -f x\n", ""), "is not run by any test", disposition{}},
		{"HCL hidden in a text block fails", page("text", "resource \"aiplatform_cohort\" \"x\" {\n}\n", ""), "holds configuration", disposition{}},
		{"a Kubernetes object in an untagged block fails", page("", "apiVersion: v1\nkind: Pod\n", ""), "holds configuration", disposition{}},
		{"a run-by naming no test fails", page("yaml", "kind: TrainJob\n", "<!-- run by: examples/training TestNoSuchTest -->"), "no such test", disposition{}},
		{"a run-by whose package does not read the page fails", page("yaml", "kind: TrainJob\n", "<!-- run by: internal/release TestInstallFromFilesystemMirror -->"), "names training-survives-preemption.md", disposition{}},
		{"an unknown marker fails", page("yaml", "kind: TrainJob\n", "<!-- run by: somewhere -->"), "neither", disposition{}},
		{"a not-run marker with its reason", page("yaml", "kind: TrainJob\n", "> Not run by the tests: a fragment"), "", disposition{NotRun: "a fragment"}},
		{"an unmarked HCL block is planned", page("terraform", "resource \"aiplatform_cohort\" \"x\" {\n}\n", ""), "", disposition{Plan: true}},
		{"a guide's scenario is planned here and applied elsewhere", page("terraform", readFile(t, "getting-started/main.tf"), ""), "",
			disposition{Plan: true, Elsewhere: "applied and destroyed by examples/rbac TestAccExamplesWithLeastPrivilege"}},
		{"a formula", page("", "x = y ÷ 8\n", ""), "", disposition{NotRun: "a formula or a program's output, not code"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := classify(t, c.block)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %+v, %v; want an error with %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

func readFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
