package acctest

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/aiplatform/terraform-provider-aiplatform/internal/testenv"
)

// Example is a resource type's example, examples/resources/<type>: the
// configuration of its resource.tf and the address and ID of the
// `terraform import ADDRESS ID` line of its import.sh, which the docs show.
type Example struct {
	Config, Address, ImportID string
}

var importLine = regexp.MustCompile(`(?m)^terraform import (\S+) (\S+)$`)

// ResourceExample reads typeName's example; a missing file or import line
// fails the test.
func ResourceExample(t *testing.T, typeName string) Example {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "examples", "resources", typeName)
	tf, err := os.ReadFile(filepath.Join(dir, "resource.tf"))
	if err != nil {
		t.Fatal(err)
	}
	imp, err := os.ReadFile(filepath.Join(dir, "import.sh"))
	if err != nil {
		t.Fatalf("every resource example needs an import.sh: %v", err)
	}
	m := importLine.FindSubmatch(imp)
	if m == nil {
		t.Fatalf("%s/import.sh has no `terraform import ADDRESS ID` line", dir)
	}
	return Example{Config: string(tf), Address: string(m[1]), ImportID: string(m[2])}
}
