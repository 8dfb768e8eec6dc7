package layout_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/ragagentlab/ragagent/"

// sources parses a directory's non-test Go files.
func sources(t *testing.T, dir string) []*ast.File {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var files []*ast.File
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		files = append(files, f)
	}
	require.NotEmpty(t, files, "no Go files in %s", dir)
	return files
}

// coreImports lists the core packages a directory's non-test files import.
func coreImports(t *testing.T, dir string) []string {
	seen := map[string]bool{}
	for _, f := range sources(t, dir) {
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, module+"core/") {
				seen[strings.TrimPrefix(p, module)] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// maxCommandImports bounds the core packages the command line imports: it
// speaks the engine and the small vocabularies the engine hands out, not
// the lab, the index or the model client behind it.
const maxCommandImports = 8

// TestTheCommandLineSpeaksTheEngine: cmd/ragagent imports at most
// maxCommandImports core packages (internal/ and fixtures/ do not count).
func TestTheCommandLineSpeaksTheEngine(t *testing.T) {
	got := coreImports(t, filepath.Join("..", "..", "cmd", "ragagent"))
	assert.LessOrEqual(t, len(got), maxCommandImports, "cmd/ragagent imports %d core packages: %v", len(got), got)
	assert.Contains(t, got, "core/engine")
}

// TestTheImportCountCatchesAPlantedImport: the count is of real imports,
// so one file more importing the lab is seen.
func TestTheImportCountCatchesAPlantedImport(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n")
	for _, p := range []string{"engine", "agent", "evaluate", "reason", "report", "recording", "rerank", "pyjson", "lab"} {
		b.WriteString("\t_ \"" + module + "core/" + p + "\"\n")
	}
	b.WriteString("\t_ \"" + module + "internal/inputfile\"\n)\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(b.String()), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main_test.go"), []byte("package main\n\nimport _ \""+module+"core/store\"\n"), 0o644))
	got := coreImports(t, dir)
	assert.Len(t, got, 9, "nine core packages; internal/ and test files do not count")
	assert.Greater(t, len(got), maxCommandImports)
}

// sealed are the packages behind the engine whose types no front end
// should hold: the opened lab and its runner, the reranking lab, the
// tools over the index and the index itself.
var sealed = map[string]bool{"core/lab": true, "core/reranklab": true, "core/tools": true, "core/store": true}

// leaks lists every place a package's exported API names a type of a
// sealed package: exported functions and methods (parameters and
// results), exported types (their definition, exported and embedded
// fields, interface methods; an alias included), exported variables and
// constants with a declared type, and the package's unexported types those
// reach.
func leaks(t *testing.T, dir string) []string {
	files := sources(t, dir)
	types := map[string]*ast.TypeSpec{}
	for _, f := range files {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
				for _, s := range g.Specs {
					ts := s.(*ast.TypeSpec)
					types[ts.Name.Name] = ts
				}
			}
		}
	}
	var out []string
	walked := map[string]bool{}
	var walk func(imports map[string]string, where string, e ast.Node)
	walkType := func(imports map[string]string, name string) {
		if walked[name] {
			return
		}
		walked[name] = true
		if ts, ok := types[name]; ok {
			walk(imports, "type "+name, ts.Type)
		}
	}
	walk = func(imports map[string]string, where string, n ast.Node) {
		if n == nil {
			return
		}
		ast.Inspect(n, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok {
					if p, ok := imports[id.Name]; ok && sealed[strings.TrimPrefix(p, module)] {
						out = append(out, where+" names "+id.Name+"."+x.Sel.Name)
					}
				}
				return false
			case *ast.Ident:
				if _, local := types[x.Name]; local {
					walkType(imports, x.Name)
				}
			case *ast.StructType:
				// an unexported, named field is not API; an embedded one is
				for _, f := range x.Fields.List {
					if len(f.Names) == 0 || anyExported(f.Names) {
						walk(imports, where, f.Type)
					}
				}
				return false
			case *ast.FuncLit, *ast.BlockStmt:
				return false
			}
			return true
		})
	}
	for _, f := range files {
		imports := map[string]string{}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			imports[name] = p
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv != nil {
					if recv := receiverName(d.Recv.List[0].Type); recv == "" || !ast.IsExported(recv) {
						continue
					}
				}
				walk(imports, "func "+d.Name.Name, d.Type)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							walked[s.Name.Name] = true
							walk(imports, "type "+s.Name.Name, s.Type)
						}
					case *ast.ValueSpec:
						if anyExported(s.Names) && s.Type != nil {
							walk(imports, s.Names[0].Name, s.Type)
						}
					}
				}
			}
		}
	}
	return out
}

func anyExported(ids []*ast.Ident) bool {
	for _, id := range ids {
		if id.IsExported() {
			return true
		}
	}
	return false
}

func receiverName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return receiverName(x.X)
	case *ast.IndexExpr:
		return receiverName(x.X)
	case *ast.IndexListExpr:
		return receiverName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}

// TestTheEngineHandsOutItsOwnTypes: core/engine's exported API names no
// type of the lab, the reranking lab, the tools or the index: a front end
// reads the engine's results and the small vocabularies below it
// (core/report, core/agent, core/evaluate, core/rerank, ...).
func TestTheEngineHandsOutItsOwnTypes(t *testing.T) {
	assert.Empty(t, leaks(t, filepath.Join("..", "..", "core", "engine")))
}

// TestALeakIsFound: each way a sealed type can escape is caught, and the
// same names kept internal are not.
func TestALeakIsFound(t *testing.T) {
	dir := t.TempDir()
	src := `package engine

import (
	"` + module + `core/lab"
	rl "` + module + `core/reranklab"
	"` + module + `core/tools"
	"` + module + `core/store"
)

type Engine struct{ l *lab.Lab }

type hidden struct{ Suite *rl.Suite }

func (e *Engine) Lab() *lab.Lab { return e.l }
func (e *Engine) Hidden() hidden { return hidden{} }
func Search(h []tools.Scored) {}

type Result struct {
	Index *store.Index
	private lab.Lab
}

type Report = lab.Plan

var Default lab.TrialOptions

func (e *Engine) fine() *lab.Lab { return e.l }
func Fine() { var x lab.Lab; _ = x }
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "engine.go"), []byte(src), 0o644))
	got := leaks(t, dir)
	assert.ElementsMatch(t, []string{
		"func Lab names lab.Lab", "type hidden names rl.Suite", "func Search names tools.Scored",
		"type Result names store.Index", "type Report names lab.Plan", "Default names lab.TrialOptions",
	}, got)
}
