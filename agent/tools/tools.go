// Package tools implements the workspace tools a coding agent uses during one
// round: list_files, read_file, write_file, edit_file, search_files and
// run_command. Each tool's description is a template beside its code, and
// its parameter schema is generated from the struct its arguments decode
// into.
//
// File tools are confined to the workspace through an *os.Root, so "..",
// absolute paths and symlinks leading out of the workspace are refused by the
// kernel-level path resolution of os.Root rather than by string checks alone.
//
// Errors are split in two kinds: an ordinary tool failure (bad path, missing
// file, invalid arguments, timeout) is reported to the model as a Result with
// Failed set, while a returned Go error means the harness itself broke or the
// context was cancelled.
//
// A Workspace and its tools hold no mutable state of their own and are safe
// for concurrent use.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ralph-temporal/ralph/internal/memo"
	"github.com/ralph-temporal/ralph/internal/netproxy"
	"github.com/ralph-temporal/ralph/internal/sandbox"
)

// Result is what the model sees for one tool call.
type Result struct {
	// Output is the text handed back to the model.
	Output string
	// Failed marks an ordinary tool failure (bad path, missing file, invalid
	// arguments, timeout). It is data for the model, not a harness error. A
	// command that exits non-zero is not a failure: the exit code is reported.
	Failed bool
	// Network is every connection a command asked the sandbox's proxy for
	// (run_command in proxy mode); the session writes it to the transcript.
	Network []netproxy.Record
}

// Tool is one function the model can call.
type Tool interface {
	Name() string
	Description() string
	// Parameters is a JSON Schema object describing the arguments, derived
	// from the struct they are decoded into.
	Parameters() json.RawMessage
	// Run executes the tool. A non-nil error means the harness broke or ctx
	// was cancelled; everything else is reported through Result.
	Run(ctx context.Context, args json.RawMessage) (Result, error)
}

// Limits bounds what one tool call may cost.
type Limits struct {
	// CommandTimeout is the run_command timeout when the model gives none.
	CommandTimeout time.Duration
	// MaxCommandTimeout caps the timeout the model may ask for.
	MaxCommandTimeout time.Duration
	// OutputCap is the number of code points of command output (and of
	// listings and search results) returned; longer output is cut.
	OutputCap int
	// ReadLineLimit is the default number of lines read_file returns.
	ReadLineLimit int
	// ReadByteLimit is the most bytes read_file returns per call.
	ReadByteLimit int
}

// Default limits: a command gets two minutes unless it asks for up to half
// an hour (a full test suite or dependency install on a real repository).
const (
	DefaultCommandTimeout    = 120 * time.Second
	DefaultMaxCommandTimeout = 1800 * time.Second
	DefaultOutputCap         = 30000
	DefaultReadLineLimit     = 2000
	DefaultReadByteLimit     = 256 * 1024
)

// DefaultLimits returns the default limits.
func DefaultLimits() Limits {
	return Limits{
		CommandTimeout:    DefaultCommandTimeout,
		MaxCommandTimeout: DefaultMaxCommandTimeout,
		OutputCap:         DefaultOutputCap,
		ReadLineLimit:     DefaultReadLineLimit,
		ReadByteLimit:     DefaultReadByteLimit,
	}
}

// withDefaults fills zero fields so a partially set Limits stays usable, and
// rejects negative ones, which can only be a configuration mistake.
func (l Limits) withDefaults() (Limits, error) {
	d := DefaultLimits()
	if l.CommandTimeout < 0 || l.MaxCommandTimeout < 0 || l.OutputCap < 0 || l.ReadLineLimit < 0 || l.ReadByteLimit < 0 {
		return Limits{}, fmt.Errorf("negative tool limit in %+v", l)
	}
	if l.CommandTimeout == 0 {
		l.CommandTimeout = d.CommandTimeout
	}
	if l.MaxCommandTimeout == 0 {
		l.MaxCommandTimeout = d.MaxCommandTimeout
	}
	if l.CommandTimeout > l.MaxCommandTimeout {
		l.CommandTimeout = l.MaxCommandTimeout
	}
	if l.OutputCap == 0 {
		l.OutputCap = d.OutputCap
	}
	if l.ReadLineLimit == 0 {
		l.ReadLineLimit = d.ReadLineLimit
	}
	if l.ReadByteLimit == 0 {
		l.ReadByteLimit = d.ReadByteLimit
	}
	return l, nil
}

// Workspace is the directory the tools operate on. All file access goes
// through root, which confines it to the directory tree.
type Workspace struct {
	dir    string // absolute path, used as the working directory of commands
	root   *os.Root
	limits Limits
	tools  []Tool           // built once: descriptions filled with the limits, schemas generated
	sb     *sandbox.Sandbox // nil: commands run directly, allowlisted env
	home   string           // the workspace's private HOME ("" keeps the worker's)
	// protected paths: refused by write_file and edit_file; readOnly are the
	// protected files mounted read-only into commands (set by SnapshotProtected).
	protected *Protected
	readOnly  []string
	// reviewOnly: no writing tools, and commands see the workspace read-only.
	reviewOnly bool
	// cacheLine is the tool cache line the workspace's commands start warm
	// from (WithToolCache); cacheDir is the model's own copy of it.
	cacheLine, cacheDir string
	// startAfter: no command starts before it (WithStartAfter).
	startAfter time.Time
}

// WithToolCache starts the workspace's commands from a copy of line's
// warm tool caches (internal/toolcache): the model's commands from one
// copy made when the workspace's home is, each ExecFreshHome from its own.
func WithToolCache(line string) Option {
	return func(w *Workspace) { w.cacheLine = line }
}

// WithStartAfter has no command of the workspace start before t: its
// files' owner may need the clock to tick first (gitws.LendSettled). The
// wait comes after the command's sandbox is set up, overlapping it.
func WithStartAfter(t time.Time) Option {
	return func(w *Workspace) { w.startAfter = t }
}

// modelCacheDir is the model's own tool cache copy, inside its home (so it
// lives and goes with it).
const modelCacheDir = ".ralph-toolcache"

// seedToolCache gives the model's commands their copy of the line's cache
// the first time the workspace opens; later rounds keep what they wrote.
func (w *Workspace) seedToolCache() error {
	store := w.sb.ToolCaches()
	if store == nil || w.cacheLine == "" || w.home == "" || w.reviewOnly {
		return nil
	}
	dir := filepath.Join(w.home, modelCacheDir)
	if _, err := os.Lstat(dir); err == nil {
		w.cacheDir = dir
		return nil
	}
	if _, err := store.Checkout(w.cacheLine, dir); err != nil {
		return err
	}
	w.cacheDir = dir
	return nil
}

// Option adjusts how a workspace runs its commands.
type Option func(*Workspace)

// WithSandbox runs every command of the workspace (run_command and Exec)
// under sb; a nil sb runs them directly with the allowlisted environment.
func WithSandbox(sb *sandbox.Sandbox) Option {
	return func(w *Workspace) { w.sb = sb }
}

// WithProtected guards the paths p matches (nil: none).
func WithProtected(p *Protected) Option {
	return func(w *Workspace) { w.protected = p }
}

// ReadOnly leaves write_file and edit_file out of Tools and mounts the
// whole workspace read-only into commands (under bubblewrap): the
// independent reviewer's workspace.
func ReadOnly() Option {
	return func(w *Workspace) { w.reviewOnly = true }
}

// OpenWorkspace opens dir as a confined workspace. Zero fields of limits take
// their defaults.
func OpenWorkspace(dir string, limits Limits, opts ...Option) (*Workspace, error) {
	lim, err := limits.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("opening workspace %q: %w", dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("opening workspace %q: %w", dir, err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("opening workspace %q: %w", dir, err)
	}
	w := &Workspace{dir: abs, root: root, limits: lim}
	for _, o := range opts {
		o(w)
	}
	if w.home, err = w.sb.Home(abs); err != nil {
		root.Close()
		return nil, fmt.Errorf("opening workspace %q: %w", dir, err)
	}
	if err := w.seedToolCache(); err != nil {
		root.Close()
		return nil, fmt.Errorf("opening workspace %q: %w", dir, err)
	}
	if w.tools, err = w.buildTools(); err != nil {
		root.Close()
		return nil, fmt.Errorf("opening workspace %q: %w", dir, err)
	}
	return w, nil
}

// specCache holds the six tools' specs per description data: they depend on
// nothing else, so a worker renders the templates and generates the schemas
// once per distinct set of limits rather than once per session. A few
// entries cover every deployment (limits are resolved once per run).
var specCache = memo.New[descriptionData, toolSpecs](8)

// toolSpecs is what the model is told about each tool. Shared by every
// workspace with the same limits, so it is never changed: spec's fields are
// only read, and Parameters hands out copies.
type toolSpecs struct {
	list   spec[listFilesParams]
	read   spec[readFileParams]
	write  spec[writeFileParams]
	edit   spec[editFileParams]
	search spec[searchFilesParams]
	run    spec[runCommandParams]
}

func buildSpecs(data descriptionData) (toolSpecs, error) {
	var (
		t    toolSpecs
		errs []error
		err  error
	)
	add := func(err error) { errs = append(errs, err) }
	t.list, err = newSpec[listFilesParams]("list_files", data)
	add(err)
	t.read, err = newSpec[readFileParams]("read_file", data)
	add(err)
	t.write, err = newSpec[writeFileParams]("write_file", data)
	add(err)
	t.edit, err = newSpec[editFileParams]("edit_file", data)
	add(err)
	t.search, err = newSpec[searchFilesParams]("search_files", data)
	add(err)
	t.run, err = newSpec[runCommandParams]("run_command", data)
	add(err)
	if err := errors.Join(errs...); err != nil {
		return toolSpecs{}, fmt.Errorf("building the tools: %w", err)
	}
	return t, nil
}

// buildTools prepares the six tools in their documented order.
func (w *Workspace) buildTools() ([]Tool, error) {
	data := newDescriptionData(w.limits)
	specs, err := specCache.Get(data, func() (toolSpecs, error) { return buildSpecs(data) })
	if err != nil {
		return nil, err
	}
	list := listFilesTool{spec: specs.list, w: w}
	read := readFileTool{spec: specs.read, w: w}
	write := writeFileTool{spec: specs.write, w: w}
	edit := editFileTool{spec: specs.edit, w: w}
	search := searchFilesTool{spec: specs.search, w: w}
	run := runCommandTool{spec: specs.run, w: w}
	if w.reviewOnly {
		return []Tool{list, read, search, run}, nil
	}
	return []Tool{list, read, write, edit, search, run}, nil
}

// Close releases the workspace root.
func (w *Workspace) Close() error {
	if err := w.root.Close(); err != nil {
		return fmt.Errorf("closing workspace %q: %w", w.dir, err)
	}
	return nil
}

// Dir returns the absolute workspace directory.
func (w *Workspace) Dir() string { return w.dir }

// Limits returns the effective limits (defaults filled in).
func (w *Workspace) Limits() Limits { return w.limits }

// Tools returns the six workspace tools: list_files, read_file,
// write_file, edit_file, search_files, run_command (a ReadOnly workspace
// leaves out write_file and edit_file).
func (w *Workspace) Tools() []Tool {
	return slices.Clone(w.tools)
}
