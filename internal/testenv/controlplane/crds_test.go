package controlplane

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadCRDs(t *testing.T) {
	dir := t.TempDir()
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: %s.example.com\n"
	files := map[string]string{
		"a.yaml":             strings.ReplaceAll(crd, "%s", "as") + "---\n" + strings.ReplaceAll(crd, "%s", "bs"),
		"kustomization.yaml": "resources:\n- a.yaml\n",
		"notes.txt":          "not yaml",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	crds, err := readCRDs([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != 2 || crds[0].Name != "as.example.com" || crds[1].Name != "bs.example.com" {
		t.Errorf("readCRDs = %v", crds)
	}
	if _, err := readCRDs([]string{t.TempDir()}); err == nil {
		t.Error("no error for a directory without CRDs")
	}
}
