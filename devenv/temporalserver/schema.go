package temporalserver

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
)

// database is one Temporal database and the schema it gets; the schemas
// are embedded in temporal-sql-tool.
type database struct{ name, schema string }

func databases() []database {
	return []database{
		{"temporal", "postgresql/v12/temporal"},
		{"temporal_visibility", "postgresql/v12/visibility"},
	}
}

// sqlPlugin is the persistence plugin of the schema tool and the server
// config.
const sqlPlugin = "postgres12"

// setUpSchema creates both databases and applies the versioned schemas.
func setUpSchema(ctx context.Context, tool string, port int, output io.Writer) error {
	for _, db := range databases() {
		base := []string{"--plugin", sqlPlugin, "--ep", "127.0.0.1", "-p", strconv.Itoa(port),
			"-u", dbUser, "--pw", dbPassword, "--db", db.name}
		for _, step := range [][]string{
			{"create-database"},
			{"setup-schema", "-v", "0.0"},
			{"update-schema", "--schema-name", db.schema},
		} {
			cmd := exec.CommandContext(ctx, tool, append(append([]string(nil), base...), step...)...)
			out, err := cmd.CombinedOutput()
			if output != nil {
				_, _ = output.Write(out)
			}
			if err != nil {
				return fmt.Errorf("temporal-sql-tool %s on database %s: %w\n%s", step[0], db.name, err, out)
			}
		}
	}
	return nil
}
