package agent

import (
	"reflect"
	"testing"

	"github.com/ralph-temporal/ralph/agent/wire"
)

// A round of an agent outside the process builds no model client: Desk
// stands on the round core alone, and the core holds none.
func TestDeskHoldsNoModelClient(t *testing.T) {
	t.Parallel()
	clients := []reflect.Type{reflect.TypeFor[modelClient](), reflect.TypeFor[wire.Client]()}
	if !reaches(reflect.TypeFor[session](), clients, map[reflect.Type]bool{}) {
		t.Fatal("no model client found in the builtin session: the walk is broken")
	}
	if reaches(reflect.TypeFor[Desk](), clients, map[reflect.Type]bool{}) {
		t.Error("Desk reaches a model client type; a CLI round must build none")
	}
}

// reaches reports whether a value of type t can hold one of targets
// through its fields, pointers and containers (not through interfaces).
func reaches(t reflect.Type, targets []reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	for _, target := range targets {
		if t == target {
			return true
		}
	}
	switch t.Kind() {
	case reflect.Struct:
		for f := range t.Fields() {
			if reaches(f.Type, targets, seen) {
				return true
			}
		}
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Chan:
		return reaches(t.Elem(), targets, seen)
	case reflect.Map:
		return reaches(t.Key(), targets, seen) || reaches(t.Elem(), targets, seen)
	}
	return false
}
