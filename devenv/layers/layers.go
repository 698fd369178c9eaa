// Package layers states the project's layer rule once and checks an import
// graph against it (CONTRIBUTING.md explains the rule).
//
// From the bottom up:
//
//	0 base        report/, usage/, internal/..., deploy/...  pure values and leaf libraries
//	1 wire        agent/wire/                                the model wire; no round state
//	2 agent       agent/...                                  one fresh session; no Temporal
//	3 temporal    activities/, workflows/                    the Temporal adapters and the loop
//	4 app         app/...                                    the binaries' wiring
//	5 mains       worker/, starter/, cmd/...                 thin mains
//	  dev         devenv/...                                 dev servers, test kit, benchmarks
//
// A package imports only packages of its own layer or below. devenv/ may
// import any layer; only mains and tests import it, and the production
// binaries (ProductionMains) never link it. Tests follow the same rule,
// except that any test may import devenv/ (the test kit and the servers).
package layers

import (
	"fmt"
	"sort"
	"strings"
)

// Module is the module path every rule is relative to.
const Module = "github.com/ralph-temporal/ralph"

// Dev is the rank of the dev-and-test tree: above every layer, so it may
// import them all, and nothing below may import it.
const Dev = 100

// mains is the rank of the thin mains, the only layer that may link devenv/.
const mains = 5

// ProductionMains are the binaries a deployment runs; none may link devenv/.
var ProductionMains = []string{"worker", "starter", "cmd/ralph-codec-server"}

var prefixes = []struct {
	dir  string
	rank int
}{
	{"report", 0}, {"usage", 0}, {"internal", 0}, {"deploy", 0},
	// The first match wins: agent/wire before the rest of agent/.
	{"agent/wire", 1},
	{"agent", 2},
	{"activities", 3}, {"workflows", 3},
	{"app", 4},
	{"worker", 5}, {"starter", 5}, {"cmd", 5},
	{"devenv", Dev},
}

// Rank returns the layer of a package of this module (path relative to
// Module) and whether the rule knows it: a new top-level folder must be
// given a layer here before it can be imported.
func Rank(rel string) (int, bool) {
	for _, p := range prefixes {
		if rel == p.dir || strings.HasPrefix(rel, p.dir+"/") {
			return p.rank, true
		}
	}
	return 0, false
}

// Rel returns the module-relative path of an import path, or false when it
// is not this module's.
func Rel(importPath string) (string, bool) {
	if importPath == Module {
		return "", true
	}
	rel, ok := strings.CutPrefix(importPath, Module+"/")
	return rel, ok
}

// Check returns one message per import that breaks the rule. imports maps
// each package (module-relative) to its direct imports (full paths; other
// modules' are ignored); testImports to its tests' imports.
func Check(imports, testImports map[string][]string) []string {
	bad := check(imports, false)
	return append(bad, check(testImports, true)...)
}

func check(imports map[string][]string, tests bool) []string {
	var bad []string
	for pkg, deps := range imports {
		from, ok := Rank(pkg)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: no layer (add its top folder to devenv/layers)", pkg))
			continue
		}
		for _, d := range deps {
			rel, mine := Rel(d)
			if !mine {
				continue
			}
			to, ok := Rank(rel)
			if !ok {
				bad = append(bad, fmt.Sprintf("%s imports %s, which has no layer", pkg, rel))
				continue
			}
			if to == Dev && (from == mains || tests) {
				continue
			}
			if to > from {
				what := ""
				if tests {
					what = "'s tests"
				}
				bad = append(bad, fmt.Sprintf("%s%s (layer %s) import %s (layer %s): an import up a layer", pkg, what, name(from), rel, name(to)))
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// CheckMain returns one message per package of the dev tree that a
// production binary links (deps: the binary's transitive dependencies).
func CheckMain(main string, deps []string) []string {
	var bad []string
	for _, d := range deps {
		if rel, ok := Rel(d); ok {
			if r, _ := Rank(rel); r == Dev {
				bad = append(bad, fmt.Sprintf("production binary %s links %s (dev and test only)", main, rel))
			}
		}
	}
	sort.Strings(bad)
	return bad
}

func name(rank int) string {
	switch rank {
	case 0:
		return "base"
	case 1:
		return "wire"
	case 2:
		return "agent"
	case 3:
		return "temporal"
	case 4:
		return "app"
	case mains:
		return "mains"
	case Dev:
		return "dev"
	}
	return fmt.Sprint(rank)
}
