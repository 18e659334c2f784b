// Command pulumi-sdkgen-aiplatform writes the Go, TypeScript and Python SDKs
// from the committed schema.json:
//
//	pulumi-sdkgen-aiplatform -schema cmd/pulumi-resource-aiplatform/schema.json -out ../sdk
//
// It calls Pulumi's code generators directly. The bridge's own SDK step
// (pulumi-tfgen-aiplatform go|nodejs|python) runs `pulumi package gen-sdk`,
// which hands the work to the language hosts pulumi-language-go, -nodejs and
// -python; the module proxy serves none of them, while the generators they
// wrap are packages of github.com/pulumi/pulumi/pkg/v3, which it does serve.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/blang/semver"

	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	"github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	"github.com/pulumi/pulumi/pkg/v3/codegen/python"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

const tool = "pulumi-sdkgen-aiplatform"

func main() {
	schemaPath := flag.String("schema", "cmd/pulumi-resource-aiplatform/schema.json", "the Pulumi schema")
	out := flag.String("out", "../sdk", "the SDKs' directory: go/, nodejs/ and python/ are replaced")
	flag.Parse()
	if err := run(*schemaPath, *out); err != nil {
		fmt.Fprintln(os.Stderr, tool+":", err)
		os.Exit(1)
	}
}

func run(schemaPath, out string) error {
	raw, err := os.ReadFile(schemaPath)
	if err != nil {
		return err
	}
	var spec schema.PackageSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("%s: %w", schemaPath, err)
	}
	// Each generator binds the package anew: they record their own
	// language's options in it.
	bind := func() (*schema.Package, error) {
		pkg, diags, err := schema.BindSpec(spec, noPackages{}, schema.ValidationOptions{})
		if err != nil {
			return nil, err
		}
		if diags.HasErrors() {
			return nil, diags
		}
		return pkg, nil
	}
	langs := []struct {
		dir string
		gen func(*schema.Package) (map[string][]byte, error)
	}{
		{"go", func(p *schema.Package) (map[string][]byte, error) {
			files, err := gogen.GeneratePackage(tool, p, nil)
			if err != nil {
				return nil, err
			}
			return files, splitGo(files)
		}},
		{"nodejs", func(p *schema.Package) (map[string][]byte, error) {
			return nodejs.GeneratePackage(tool, p, nil, nil, false, noPackages{})
		}},
		{"python", func(p *schema.Package) (map[string][]byte, error) {
			return python.GeneratePackage(tool, p, nil, noPackages{})
		}},
	}
	for _, l := range langs {
		pkg, err := bind()
		if err != nil {
			return fmt.Errorf("%s: %w", schemaPath, err)
		}
		files, err := l.gen(pkg)
		if err != nil {
			return fmt.Errorf("%s SDK: %w", l.dir, err)
		}
		if err := write(filepath.Join(out, l.dir), files); err != nil {
			return err
		}
		fmt.Printf("%s: %d files in %s\n", l.dir, len(files), filepath.Join(out, l.dir))
	}
	return nil
}

// write replaces dir's generated files with files: a resource removed from
// the schema leaves no file behind. go.mod and go.sum (the Go SDK's module,
// kept by hand) stay.
func write(dir string, files map[string][]byte) error {
	keep := map[string][]byte{}
	for _, name := range []string{"go.mod", "go.sum"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			keep[name] = b
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for name, b := range keep {
		if _, ok := files[name]; !ok {
			files[name] = b
			names = append(names, name)
		}
	}
	for _, name := range names {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// noPackages is the loader of a schema that refers to no other package:
// the aiplatform schema uses only its own types and Pulumi's built-in ones.
type noPackages struct{}

func (noPackages) LoadPackage(name string, _ *semver.Version) (*schema.Package, error) {
	return nil, fmt.Errorf("the schema refers to package %q: only its own types are expected", name)
}

func (l noPackages) LoadPackageV2(_ context.Context, d *schema.PackageDescriptor) (*schema.Package, error) {
	return l.LoadPackage(d.Name, nil)
}

func (l noPackages) LoadPackageReference(name string, v *semver.Version) (schema.PackageReference, error) {
	_, err := l.LoadPackage(name, v)
	return nil, err
}

func (l noPackages) LoadPackageReferenceV2(_ context.Context, d *schema.PackageDescriptor) (schema.PackageReference, error) {
	return l.LoadPackageReference(d.Name, nil)
}
