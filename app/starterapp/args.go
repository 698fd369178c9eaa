package starterapp

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/workflows"
	"github.com/ralph-temporal/ralph/workflows/campaign"
)

// command is one parsed invocation.
type command struct {
	name       string
	objective  string
	maxRounds  int // 0: not set, the worker's ceiling applies
	maxTokens  int // 0: not set
	maxMinutes int // 0: not set
	candidates int // 0: not set
	// text is the guide update's guidance (task, below, names the loop
	// of a campaign that gets it).
	text string
	// objectiveFile is where the objective was read from ("-": stdin).
	objectiveFile string
	verify        string
	workspace     string
	// reason is the stop update's (or the rewind's) reason.
	reason string
	// round is the round rewind goes back to (0: not given).
	round      int
	workflowID string
	// allowNoWorker starts even when nobody polls the task queue.
	allowNoWorker bool
	// noWait makes cancel return once the cancel is requested.
	noWait bool
	// keepWorkspace lets rewind reset a run whose workspace has no git
	// checkpoints to restore (RALPH_GIT=off).
	keepWorkspace bool
	// jsonOut prints the workflow result as JSON instead of the result text.
	jsonOut bool
	// ifRunning says what a start does when a run with its workflow id is
	// open: fail (the default) or attach to it.
	ifRunning string
	// campaign is what a campaign command sends: the campaign input read
	// from --tasks and the flags (a pointer keeps command comparable).
	campaign *campaign.CampaignInput
	// id is --id, another spelling of --workflow-id.
	id string
	// tasksFile is --tasks; task is --task of approve and reject.
	tasksFile string
	task      string
	// Campaign flags (0 and "": not set, the file's or the default applies).
	parallel, batch, mergeAttempts int
	lanes                          int
	maxWaves                       int // --max-waves of a planning campaign
	approveMode, base, branch      string
	cfg                            config.Starter
}

// usageError is bad usage: the starter exits with ExitUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// parseArgs parses a whole command line (without the program name) in
// steps: which command, its flags, its workflow id, its counts, its own check.
func parseArgs(args []string, env config.Env, stdin io.Reader, stderr io.Writer) (command, error) {
	d, err := pickCommand(args, stderr)
	if err != nil {
		return command{}, err
	}
	cmd := command{name: d.name}
	counts := make(map[string]*string)
	fs, shared := d.flagSet(&cmd, counts)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, d.usageHead())
		fs.PrintDefaults()
	}
	rest, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return command{}, err
	}
	if err := takeArguments(&cmd, d, rest); err != nil {
		return command{}, err
	}
	if cmd.id != "" {
		if cmd.workflowID != "" && cmd.workflowID != cmd.id {
			return command{}, usagef("two workflow ids: --id %q and %q", cmd.id, cmd.workflowID)
		}
		cmd.workflowID = cmd.id
	}
	if cmd.cfg, err = shared.Resolve(env); err != nil {
		return command{}, &usageError{msg: err.Error()}
	}
	if err := resolveWorkflowID(&cmd, d); err != nil {
		return command{}, err
	}
	if err := parseCounts(&cmd, d, counts); err != nil {
		return command{}, err
	}
	if d.check != nil {
		if err := d.check(&cmd, fs, stdin); err != nil {
			return command{}, err
		}
	}
	return cmd, nil
}

// pickCommand finds the declared command args[0] names (help is ErrHelp).
func pickCommand(args []string, stderr io.Writer) (commandDecl, error) {
	if len(args) == 0 {
		fmt.Fprint(stderr, topUsage())
		return commandDecl{}, usagef("a command is required (%s)", commandList())
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		fmt.Fprint(stderr, topUsage())
		return commandDecl{}, flag.ErrHelp
	}
	d, ok := lookupCommand(args[0])
	if !ok {
		return commandDecl{}, usagef("unknown command %q (want %s; see starter --help)", args[0], commandList())
	}
	return d, nil
}

// parseInterleaved parses flags that may also follow the positional
// arguments ("stop ralph-w --reason x") and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &usageError{msg: err.Error()}
		}
		if fs.NArg() == 0 {
			return rest, nil
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// takeArguments: a command that starts a run takes none; the others take
// at most one, the workflow id.
func takeArguments(cmd *command, d commandDecl, rest []string) error {
	switch {
	case d.campaign && d.starts && len(rest) > 0:
		return usagef("unexpected argument %q (give the task file with --tasks)", rest[0])
	case d.starts && len(rest) > 0:
		return usagef("unexpected argument %q (give the objective with --objective)", rest[0])
	case !d.starts && len(rest) > 1:
		return usagef("unexpected argument %q (give one workflow id)", rest[1])
	case !d.starts && len(rest) == 1:
		if cmd.workflowID != "" && cmd.workflowID != rest[0] {
			return usagef("two workflow ids: --workflow-id %q and %q", cmd.workflowID, rest[0])
		}
		cmd.workflowID = rest[0]
	}
	return nil
}

// resolveWorkflowID checks --workspace and derives the workflow id from it
// when none was given.
func resolveWorkflowID(cmd *command, d commandDecl) error {
	if d.campaign {
		return resolveCampaignID(cmd, d)
	}
	if cmd.workspace != "" {
		if err := workflows.CheckWorkspace(cmd.workspace); err != nil {
			var ie *workflows.InputError
			if errors.As(err, &ie) {
				return usagef("--workspace: %s", ie.Problem)
			}
			return usagef("--workspace: %v", err)
		}
	}
	cmd.workflowID = strings.TrimSpace(cmd.workflowID)
	if cmd.workflowID != "" {
		return nil
	}
	if cmd.workspace == "" {
		if d.starts {
			return usagef("--workspace is required (the run's directory under the worker's workspace root; the workflow id defaults to ralph-<workspace>), or give --workflow-id")
		}
		return usagef("which run? give --workflow-id, --workspace, or the workflow id as the argument")
	}
	cmd.workflowID = DefaultWorkflowID(cmd.workspace)
	return nil
}

// parseCounts reads the positive integers the command's count flags were given.
func parseCounts(cmd *command, d commandDecl, counts map[string]*string) error {
	for _, f := range d.flags {
		if f.count == nil || *counts[f.name] == "" {
			continue
		}
		n, err := config.ParsePositiveInt("--"+f.name, *counts[f.name])
		if err != nil {
			return &usageError{msg: err.Error()}
		}
		*f.count(cmd) = n
	}
	return nil
}

// checkStart completes and checks what a command that starts a run was
// given: the objective (inline or from a file), --verify, --if-running.
func checkStart(cmd *command, fs *flag.FlagSet, stdin io.Reader) error {
	if cmd.objectiveFile != "" {
		if cmd.objective != "" {
			return usagef("give --objective or --objective-file, not both")
		}
		data, err := readObjective(cmd.objectiveFile, stdin)
		if err != nil {
			return usagef("--objective-file: %v", err)
		}
		cmd.objective = data
	}
	if strings.TrimSpace(cmd.objective) == "" {
		return usagef("--objective is required and must not be blank")
	}
	if set := flagSet(fs, "verify"); set && strings.TrimSpace(cmd.verify) == "" {
		return usagef("--verify must not be blank (leave it out to use the worker's default)")
	}
	switch cmd.ifRunning {
	case "", ifRunningFail, ifRunningAttach: // "": fail
	default:
		return usagef("--if-running must be %s or %s, got %q", ifRunningAttach, ifRunningFail, cmd.ifRunning)
	}
	return nil
}

// checkExtend: extend raises at least one budget.
func checkExtend(cmd *command, _ *flag.FlagSet, _ io.Reader) error {
	if cmd.maxRounds == 0 && cmd.maxTokens == 0 && cmd.maxMinutes == 0 {
		return usagef("extend needs at least one of --max-rounds, --max-tokens, --max-minutes")
	}
	return nil
}

func checkGuide(cmd *command, _ *flag.FlagSet, _ io.Reader) error {
	if strings.TrimSpace(cmd.text) == "" {
		return usagef("guide needs --text: the guidance for the next round")
	}
	return nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// DefaultWorkflowID is the starter's workflow id for a workspace, so a second
// start on the same workspace is refused while the first run is open.
func DefaultWorkflowID(workspace string) string {
	return "ralph-" + workspace
}

func readObjective(path string, stdin io.Reader) (string, error) {
	if path == "-" {
		if stdin == nil {
			return "", errors.New("no standard input")
		}
		data, err := io.ReadAll(stdin)
		return string(data), err
	}
	data, err := os.ReadFile(path)
	return string(data), err
}

// input is the workflow input for a start: maxRounds only when set.
func (c command) input() workflows.Input {
	in := workflows.Input{Objective: c.objective, Workspace: c.workspace}
	in.VerifyCommand = strings.TrimSpace(c.verify)
	for _, f := range []struct {
		value int
		dst   **int
	}{{c.maxRounds, &in.MaxRounds}, {c.maxTokens, &in.MaxTokens}, {c.maxMinutes, &in.MaxMinutes}, {c.candidates, &in.Candidates}} {
		if f.value > 0 {
			n := f.value
			*f.dst = &n
		}
	}
	return in
}
