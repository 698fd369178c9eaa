package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/agent/tools"
)

// Provider runs rounds with a CLI: one process per round attempt in the
// round's sandbox, plus one continuation when it stops without a valid
// report.
type Provider struct {
	Dialect Dialect
	// Command is the CLI binary (found by Check).
	Command string
	// Model is the model name the CLI asks for; the gateway sends
	// Config.Model (and its fallbacks) upstream.
	Model string
	// Idle is how long the CLI may stay silent (no model request, no report
	// call) before it gets its continuation, or the round ends.
	Idle time.Duration
	// Config is the builtin session's: bounds, report rules, tools' limits
	// and sandbox, and the OpenAI-compatible endpoint.
	Config agent.Config
	// Upstream and Key are where the gateway forwards (for an Anthropic
	// CLI, ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY).
	Upstream, Key string
	// MaxInflight bounds the attempt's requests in flight at the gateway
	// (RALPH_AGENT_MAX_INFLIGHT; 0: DefaultMaxInflight), MaxRequestMB the
	// size of one (RALPH_AGENT_MAX_REQUEST_MB; 0: DefaultMaxRequestMB).
	MaxInflight, MaxRequestMB int
}

// outputCap bounds the CLI output kept besides the transcript lines.
const outputCap = 30000

// maxOutputLine bounds one recorded line of the CLI's output.
const maxOutputLine = 8000

// Errors that stop one CLI process.
var (
	errReported = errors.New("a valid report was accepted")
	errIdle     = errors.New("the agent was idle")
	errGateway  = errors.New("the gateway ended the round")
)

// Run runs one round attempt (or review) of req.
func (p Provider) Run(ctx context.Context, req agent.Request, obs agent.Observer) (agent.Result, error) {
	desk, err := agent.OpenDesk(p.Config, req, obs)
	if err != nil {
		return agent.Result{}, err
	}
	sctx := ctx
	if !req.Deadline.IsZero() {
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadline(ctx, req.Deadline)
		defer cancel()
	}
	err = p.attempt(sctx, desk, req)
	if err != nil && ctx.Err() == nil && sctx.Err() != nil {
		err = agent.ChildFailureOf("the round timeout was reached without a valid report")
	}
	return desk.Close(ctx, err)
}

// attempt prepares the private home, the report socket and the gateway,
// then runs the CLI, and once more as a continuation when it stopped
// without a valid report.
func (p Provider) attempt(ctx context.Context, desk *agent.Desk, req agent.Request) error {
	ws := desk.Workspace()
	h, err := newHome(ws)
	if err != nil {
		return err
	}
	defer h.remove()
	uid, gid := ws.Sandbox().UID()
	tool, _, _ := desk.Finishing()
	token, err := randomToken()
	if err != nil {
		return err
	}
	gctx, stopGateway := context.WithCancel(ctx)
	defer stopGateway()
	gw := newGateway(gctx, apis[p.Dialect.API()], desk, p.Config, p.Upstream, p.Key, token, tool, req.Deferrable, p.limits())
	reports, err := listenReport(ctx, filepath.Join(h.private, "report.sock"), desk, gw.vouch, uid, gid)
	if err != nil {
		return err
	}
	defer reports.Close()
	gwSocket := filepath.Join(h.private, "gateway.sock")
	ln, err := listenUnix(gwSocket, uid, gid)
	if err != nil {
		return fmt.Errorf("gateway %w", err)
	}
	defer serveGateway(gw, ln, stopGateway)()

	a := Attempt{Command: p.Command, Home: h.dir, Model: p.Model, GatewayURL: gatewayMark, Token: token,
		ReportCommand: []string{h.helper, reportArg, filepath.Join(h.private, "report.sock")}, ReportTool: tool,
		home: h.handle, uid: uid, gid: gid}
	for run := range 2 {
		a.Continue = run > 0
		stop, err := p.runCLI(ctx, desk, ws, a, gwSocket, reports, gw)
		switch {
		case desk.Accepted():
			return nil
		case gw.err() != nil:
			return gw.err()
		case err != nil:
			return err
		case run == 0:
			desk.Emit(agent.Event{Kind: agent.EventAgentExit, Output: stop + "; continuing the session once to ask for the report"})
		default:
			return agent.ChildFailureOf(stop + " without a valid report, also after the continuation")
		}
	}
	return nil
}

// serveGateway serves gw on ln until the stop it returns. stop cuts the
// upstream requests (cancel is the gateway's context), closes the listener
// and the connections, and returns once no request runs nor can start:
// answers still being read upstream are counted before the round closes
// (an abandoned answer is never free), and nothing reaches the round after
// its attempt returns. srv.Close alone waits for no handler, and the
// server may still start one for a request it read before.
func serveGateway(gw *gateway, ln net.Listener, cancel context.CancelFunc) (stop func()) {
	srv := &http.Server{Handler: gw, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	return func() {
		cancel()
		_ = srv.Close()
		gw.handlers.shut()
	}
}

func (p Provider) limits() gatewayLimits {
	l := gatewayLimits{inflight: p.MaxInflight, body: int64(p.MaxRequestMB) << 20}
	if l.inflight <= 0 {
		l.inflight = DefaultMaxInflight
	}
	if l.body <= 0 {
		l.body = DefaultMaxRequestMB << 20
	}
	return l
}

// runCLI runs the CLI once until it exits, a report is accepted, the
// gateway ends the round or the CLI is idle; it says why it stopped.
func (p Provider) runCLI(ctx context.Context, desk *agent.Desk, ws *tools.Workspace, a Attempt, gwSocket string, reports *reportSocket, gw *gateway) (string, error) {
	argv, env, err := p.Dialect.Invocation(a)
	if err != nil {
		return "", err
	}
	prompt := desk.Prompt()
	if a.Continue {
		prompt = fmt.Sprintf("You stopped without a valid report. Call the %s tool now with your handoff report; the round ends when it is accepted.", a.ReportTool)
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go watch(rctx, cancel, p.Idle, reports, gw)
	out := &lineWriter{emit: func(line string) { desk.Emit(agent.Event{Kind: agent.EventAgentOutput, Output: line}) }}
	res, err := ws.Spawn(rctx, tools.Process{
		Argv: append([]string{a.ReportCommand[0], gatewayArg, gwSocket}, argv...), Env: env,
		Stdin: strings.NewReader(prompt), Output: out, Home: a.Home, Hold: reports.hold,
	}, 24*time.Hour, outputCap)
	out.Close()
	desk.Network(res.Network)
	cause := context.Cause(rctx)
	switch {
	case ctx.Err() != nil:
		return "", ctx.Err()
	case errors.Is(cause, errReported), errors.Is(cause, errGateway):
		return "stopped", nil
	case errors.Is(cause, errIdle):
		return fmt.Sprintf("the CLI was silent for %s", p.Idle), nil
	case err != nil:
		return "", err
	case res.DiskKill != "":
		// No continuation: what the attempt wrote would starve the next
		// one; the attempt's home goes as it returns.
		return "", agent.ChildFailureOf("the CLI was " + res.DiskKill)
	}
	how := fmt.Sprintf("the CLI exited with status %d", res.ExitCode)
	desk.Emit(agent.Event{Kind: agent.EventAgentExit, Output: how})
	return how, nil
}

// watch stops the CLI when a report was accepted, when the gateway ended
// the round, or after idle without a model request or report call.
func watch(ctx context.Context, stop context.CancelCauseFunc, idle time.Duration, reports *reportSocket, gw *gateway) {
	t := time.NewTimer(idle)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-reports.over:
			stop(errReported)
			return
		case <-gw.failed:
			stop(errGateway)
			return
		case <-t.C:
			stop(errIdle)
			return
		case <-gw.active:
		case <-reports.calls:
		}
		t.Reset(idle)
	}
}

// home is one attempt's private HOME (the CLI's configuration and state)
// and, in a directory only the worker can write, the link to the worker's
// binary and the sockets.
type home struct {
	dir, private, helper string
	// handle is dir, opened once it was made: the worker never reaches the
	// home by path again (the sandbox may have replaced what lies in it).
	handle *os.File
	remove func()
}

func newHome(ws *tools.Workspace) (*home, error) {
	sb := ws.Sandbox()
	dir, remove, err := sb.FreshHome()
	if err != nil {
		return nil, err
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "ralph-agent-home-"); err != nil {
			return nil, fmt.Errorf("agent home: %w", err)
		}
		remove = func() { _ = os.RemoveAll(dir) }
	}
	handle, err := openHome(dir)
	if err != nil {
		remove()
		return nil, err
	}
	h := &home{dir: dir, private: filepath.Join(dir, ".ralph"), handle: handle,
		remove: func() { handle.Close(); remove() }}
	if err := os.Mkdir(h.private, 0o755); err != nil {
		h.remove()
		return nil, fmt.Errorf("agent home: %w", err)
	}
	if h.helper, err = linkHelper(h.private); err != nil {
		h.remove()
		return nil, err
	}
	return h, nil
}

// linkHelper puts the worker's binary (a hard link, else a copy) where the
// sandbox shows it.
func linkHelper(dir string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("agent helper: locating the worker binary: %w", err)
	}
	dst := filepath.Join(dir, "ralph-helper")
	if os.Link(exe, dst) == nil {
		return dst, nil
	}
	src, err := os.Open(exe)
	if err != nil {
		return "", fmt.Errorf("agent helper: %w", err)
	}
	defer src.Close()
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return "", fmt.Errorf("agent helper: %w", err)
	}
	_, err = io.Copy(f, src)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("agent helper: copying the worker binary: %w", err)
	}
	return dst, nil
}

// listenUnix listens on a socket only the CLI's uid may connect to.
func listenUnix(path string, uid, gid int) (net.Listener, error) {
	ln, err := listenUnixPath(path)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	if err := errors.Join(os.Chown(path, uid, gid), os.Chmod(path, 0o600)); err != nil {
		ln.Close()
		return nil, fmt.Errorf("socket: %w", err)
	}
	return ln, nil
}

func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("gateway token: %w", err)
	}
	return "ralph-attempt-" + hex.EncodeToString(b), nil
}

// lineWriter hands each complete line (cut at maxOutputLine) to emit.
type lineWriter struct {
	emit func(string)
	buf  []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := strings.IndexByte(string(l.buf), '\n')
		if i < 0 {
			if len(l.buf) > maxOutputLine {
				l.emit(string(l.buf[:maxOutputLine]))
				l.buf = l.buf[maxOutputLine:]
			}
			return len(p), nil
		}
		if line := strings.TrimRight(string(l.buf[:i]), "\r"); line != "" {
			l.emit(line[:min(len(line), maxOutputLine)])
		}
		l.buf = l.buf[i+1:]
	}
}

// Close emits what is left.
func (l *lineWriter) Close() {
	if len(l.buf) > 0 {
		l.emit(string(l.buf))
		l.buf = nil
	}
}
