package searchattrs

import (
	"os"
	"strings"
	"testing"

	"github.com/ralph-temporal/ralph/workflows"
)

// TestComposeRegistersTheSearchAttributes keeps the compose setup's shell
// list in step with the workflow's.
func TestComposeRegistersTheSearchAttributes(t *testing.T) {
	data, err := os.ReadFile("../../deploy/scripts/create-namespace.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, sa := range workflows.SearchAttributes() {
		if !strings.Contains(string(data), " "+sa.Name+"="+sa.Type) {
			t.Errorf("create-namespace.sh does not register %s=%s", sa.Name, sa.Type)
		}
	}
}
