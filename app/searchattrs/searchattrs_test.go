package searchattrs

import (
	"errors"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/ralph-temporal/ralph/workflows"
)

func TestCreateCommand(t *testing.T) {
	got := CreateCommand("team-ns", workflows.SearchAttributes())
	want := "temporal operator search-attribute create --namespace team-ns --name RalphPhase --type Keyword --name RalphRound --type Int --name RalphOutcome --type Keyword --name RalphWorkspace --type Keyword --name RalphCampaign --type Keyword"
	if got != want {
		t.Errorf("command = %q", got)
	}
	err := (&Error{Namespace: "team-ns", Missing: workflows.SearchAttributes()[:1], Cause: errors.New("permission denied")}).Error()
	for _, part := range []string{"RalphPhase", "permission denied", "temporal operator search-attribute create", "RALPH_SEARCH_ATTRIBUTES=false"} {
		if !strings.Contains(err, part) {
			t.Errorf("error %q lacks %q", err, part)
		}
	}
}

func TestTypesCoverEveryAttribute(t *testing.T) {
	types := Types()
	if len(types) != len(workflows.SearchAttributes()) || types[workflows.SearchAttrRound] != enumspb.INDEXED_VALUE_TYPE_INT ||
		types[workflows.SearchAttrPhase] != enumspb.INDEXED_VALUE_TYPE_KEYWORD {
		t.Fatalf("types = %v", types)
	}
}
