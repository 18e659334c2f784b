package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"path"
	"sort"
	"strconv"
	"strings"
)

// maxLines is the repository's limit for a Go file that is not a test.
// Pulumi's Go generator writes one file per resource and puts every object
// type in pulumiTypes*.go (over 90,000 lines for this schema): splitGo cuts
// the files over the limit by what their declarations are for.
const maxLines = 700

// The parts of a generated Go file, by what a program does with each.
const (
	partModel    = ""         // the resource, its constructor and Get, the plain value types
	partInputs   = "Inputs"   // what a program declares: XInput, XArgs, XArray, XMap, XPtr
	partOutputs  = "Outputs"  // what it reads back: XOutput and its accessors
	partRegister = "Register" // the init functions that register the types with the SDK
)

// splitGo replaces each Go file of files over maxLines with files of at most
// maxLines: the model part keeps the file's name, the inputs, outputs and
// registrations go to <name>Inputs.go, <name>Outputs.go and
// <name>Register.go, numbered (_2, _3, …) when one part needs several files. Each file
// imports only what it uses.
func splitGo(files map[string][]byte) error {
	for name, src := range files {
		if !strings.HasSuffix(name, ".go") || bytes.Count(src, []byte("\n")) <= maxLines {
			continue
		}
		parts, err := splitFile(name, src)
		if err != nil {
			return fmt.Errorf("splitting %s: %w", name, err)
		}
		delete(files, name)
		for n, b := range parts {
			if _, clash := files[n]; clash {
				return fmt.Errorf("splitting %s: %s exists", name, n)
			}
			files[n] = b
		}
	}
	return nil
}

// chunk is the source text of consecutive declarations and its line count.
type chunk struct {
	text  []string
	lines int
}

func splitFile(name string, src []byte) (map[string][]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	// The header: everything before the first declaration that is not an
	// import (the generator's comments and the package clause).
	headerEnd := off(f.Name.End())
	imports := map[string]string{} // name in the file → import spec
	var from int                   // where the next declaration's text starts
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.IMPORT {
			break
		}
		for _, s := range g.Specs {
			spec := s.(*ast.ImportSpec)
			p, _ := strconv.Unquote(spec.Path.Value)
			n := path.Base(p)
			if spec.Name != nil {
				n = spec.Name.Name
			}
			imports[n] = string(src[off(spec.Pos()):off(spec.End())])
		}
		from = off(g.End())
	}
	if from == 0 {
		from = headerEnd
	}
	budget := maxLines - 20 - len(imports) // the header and import block
	parts := map[string][]chunk{}
	add := func(part, text string) {
		lines := strings.Count(text, "\n") + 2 // and the blank line between
		cs := parts[part]
		if len(cs) == 0 || cs[len(cs)-1].lines+lines > budget {
			cs = append(cs, chunk{})
		}
		last := &cs[len(cs)-1]
		last.text = append(last.text, text)
		last.lines += lines
		parts[part] = cs
	}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			continue
		}
		text := strings.TrimSpace(string(src[from:off(d.End())]))
		from = off(d.End())
		part := partOf(d)
		fn, isFunc := d.(*ast.FuncDecl)
		if part != partRegister || strings.Count(text, "\n") < budget || !isFunc {
			add(part, text)
			continue
		}
		// An init too long for one file: its statements in several inits
		// (Go runs a package's init functions in the order of its files).
		var body []string
		lines := 0
		flush := func() {
			if len(body) > 0 {
				add(part, "func init() {\n"+strings.Join(body, "\n")+"\n}")
			}
			body, lines = nil, 0
		}
		// Each statement's text runs to the next one's start, so that a
		// comment after it stays with it.
		list := fn.Body.List
		for i, s := range list {
			to := off(fn.Body.Rbrace)
			if i+1 < len(list) {
				to = off(list[i+1].Pos())
			}
			st := strings.TrimSpace(string(src[off(s.Pos()):to]))
			if lines+strings.Count(st, "\n")+1 > budget-4 {
				flush()
			}
			body = append(body, "\t"+st)
			lines += strings.Count(st, "\n") + 1
		}
		flush()
	}
	if rest := strings.TrimSpace(string(src[from:])); rest != "" { // comments after the last declaration
		add(partModel, rest)
	}
	header := string(src[:headerEnd])
	base := strings.TrimSuffix(name, ".go")
	out := map[string][]byte{}
	for part, cs := range parts {
		for i, c := range cs {
			n := base + part
			if len(cs) > 1 { // "_": pulumiTypes1.go's second part is not pulumiTypes.go's twelfth
				n += "_" + strconv.Itoa(i+1)
			}
			if part == partModel && i == 0 {
				n = base
			}
			body := strings.Join(c.text, "\n\n")
			b, err := format.Source([]byte(header + "\n\n" + importBlock(imports, body) + body + "\n"))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
			if lines := bytes.Count(b, []byte("\n")); lines > maxLines {
				return nil, fmt.Errorf("%s.go has %d lines, over %d", n, lines, maxLines)
			}
			out[n+".go"] = b
		}
	}
	return out, nil
}

// partOf is the part a declaration belongs to, from the name of the type it
// declares or whose method it is.
func partOf(d ast.Decl) string {
	var name string
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			if d.Name.Name == "init" {
				return partRegister
			}
			if strings.HasSuffix(d.Name.Name, "Ptr") { // FooPtr(*FooArgs) FooPtrInput
				return partInputs
			}
			return partModel
		}
		t := d.Recv.List[0].Type
		if s, ok := t.(*ast.StarExpr); ok {
			t = s.X
		}
		if id, ok := t.(*ast.Ident); ok {
			name = id.Name
		}
	case *ast.GenDecl:
		if d.Tok == token.TYPE && len(d.Specs) == 1 {
			name = d.Specs[0].(*ast.TypeSpec).Name.Name
		}
	}
	switch {
	case strings.HasSuffix(name, "Output"):
		return partOutputs
	case strings.HasSuffix(name, "Input"), strings.HasSuffix(name, "Args"), strings.HasSuffix(name, "Array"),
		strings.HasSuffix(name, "Map"), strings.HasSuffix(name, "PtrType"):
		return partInputs
	}
	return partModel
}

// importBlock imports those of imports (by the name the file uses) that
// body refers to.
func importBlock(imports map[string]string, body string) string {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+body, parser.SkipObjectResolution)
	used := map[string]bool{}
	if err == nil {
		ast.Inspect(f, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := s.X.(*ast.Ident); ok {
					used[id.Name] = true
				}
			}
			return true
		})
	}
	var specs []string
	for n, spec := range imports {
		if used[n] || err != nil { // unparsable: keep all, format.Source reports it
			specs = append(specs, spec)
		}
	}
	if len(specs) == 0 {
		return ""
	}
	sort.Strings(specs)
	return "import (\n\t" + strings.Join(specs, "\n\t") + "\n)\n\n"
}
