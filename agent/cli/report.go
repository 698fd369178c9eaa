package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ralph-temporal/ralph/agent/tools"
)

// The report tool. The CLI starts the worker's binary in its report mode
// (helper.go) as a stdio MCP server; that process, inside the sandbox,
// asks the worker over a unix socket in the attempt's home for the tool's
// definition and hands it every call: the worker checks each one with the
// round's own Desk, so the schema, the validation, the repair messages,
// the verify refusals and the protected-path restores are the builtin
// session's.

// deskRequest is one line the report server sends the worker.
type deskRequest struct {
	Op   string          `json:"op"` // "describe" or "submit"
	Args json.RawMessage `json:"args,omitempty"`
}

// deskAnswer is the worker's line back.
type deskAnswer struct {
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Answer      string          `json:"answer,omitempty"`
	Failed      bool            `json:"failed,omitempty"`
}

// submitter is what the report socket serves: the round's Desk.
type submitter interface {
	Finishing() (name, description string, schema json.RawMessage)
	Submit(ctx context.Context, args string) (answer string, failed, over bool)
	Forged(args, why string)
}

// reportSocket serves a submitter on a unix socket; over is closed once a
// call ended the round. Any process of the attempt can reach the socket,
// so a submission counts only when vouch finds the model's own call of the
// tool with those arguments among the answers the gateway relayed.
type reportSocket struct {
	ln       net.Listener
	desk     submitter
	vouch    func(args string) bool
	hold     *tools.Hold // the attempt's processes, stopped while a submission is checked
	ctx      context.Context
	over     chan struct{}
	overOnce sync.Once
	calls    chan struct{} // a signal per call (the idle watch)
	requests gate          // requests being answered; none once closed
}

func listenReport(ctx context.Context, path string, desk submitter, vouch func(string) bool, uid, gid int) (*reportSocket, error) {
	ln, err := listenUnix(path, uid, gid)
	if err != nil {
		return nil, fmt.Errorf("report %w", err)
	}
	r := &reportSocket{ln: ln, desk: desk, vouch: vouch, hold: &tools.Hold{}, ctx: ctx, over: make(chan struct{}), calls: make(chan struct{}, 1)}
	go r.serve()
	return r, nil
}

// Close stops the socket and returns once no request is being answered:
// one left in a connection's buffer is not answered after.
func (r *reportSocket) Close() {
	r.ln.Close()
	r.requests.shut()
}

func (r *reportSocket) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		go r.handle(c)
	}
}

// handle answers the requests of one connection, one line each.
func (r *reportSocket) handle(c net.Conn) {
	defer c.Close()
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	enc := json.NewEncoder(c)
	for sc.Scan() {
		a, ok := r.answer(sc.Bytes())
		if !ok || enc.Encode(a) != nil {
			return
		}
	}
}

// answer answers one request line (false: none, the connection ends).
func (r *reportSocket) answer(line []byte) (deskAnswer, bool) {
	if !r.requests.enter() {
		return deskAnswer{}, false
	}
	defer r.requests.leave()
	var req deskRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return deskAnswer{}, false
	}
	var a deskAnswer
	switch req.Op {
	case "describe":
		a.Name, a.Description, a.Schema = r.desk.Finishing()
	case "submit":
		select {
		case r.calls <- struct{}{}:
		default:
		}
		a = r.submit(string(req.Args))
	default:
		return deskAnswer{}, false
	}
	return a, true
}

// submit hands a vouched-for submission to the desk and refuses any other.
// Until it is answered no process of the attempt runs: the protected-path
// check, verify and the reviewer see a workspace nothing of it can change.
func (r *reportSocket) submit(args string) deskAnswer {
	name, _, _ := r.desk.Finishing()
	if err := r.hold.Freeze(); err != nil {
		return deskAnswer{Answer: fmt.Sprintf("this %s call could not be checked and does not count: the attempt's processes could not be stopped while it is (%v); call it again", name, err), Failed: true}
	}
	defer r.hold.Thaw()
	if !r.vouch(args) {
		why := fmt.Sprintf("this %s call is refused and does not count: no answer of the model in this attempt called %s with these arguments "+
			"(a submission is the model's own tool call; one sent by a command, or a repeat of an earlier one, is not)", name, name)
		r.desk.Forged(args, why)
		return deskAnswer{Answer: why, Failed: true}
	}
	answer, failed, over := r.desk.Submit(r.ctx, args)
	if over {
		r.overOnce.Do(func() { close(r.over) })
	}
	return deskAnswer{Answer: answer, Failed: failed}
}

// deskClient is the report server's side of the socket.
type deskClient struct {
	mu  sync.Mutex
	c   net.Conn
	sc  *bufio.Scanner
	enc *json.Encoder
}

func dialDesk(path string) (*deskClient, error) {
	c, err := dialUnix(path)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	return &deskClient{c: c, sc: sc, enc: json.NewEncoder(c)}, nil
}

func (d *deskClient) ask(req deskRequest) (deskAnswer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enc.Encode(req); err != nil {
		return deskAnswer{}, err
	}
	if !d.sc.Scan() {
		return deskAnswer{}, fmt.Errorf("the worker closed the report socket: %v", d.sc.Err())
	}
	var a deskAnswer
	return a, json.Unmarshal(d.sc.Bytes(), &a)
}

// serveReportMCP is the report mode: the finishing tool as an MCP server
// on stdin/stdout, every call answered by the worker at socket.
func serveReportMCP(ctx context.Context, socket string, t mcp.Transport) error {
	desk, err := dialDesk(socket)
	if err != nil {
		return fmt.Errorf("report server: reaching the worker: %w", err)
	}
	defer desk.c.Close()
	def, err := desk.ask(deskRequest{Op: "describe"})
	if err != nil {
		return fmt.Errorf("report server: %w", err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "ralph", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: def.Name, Description: def.Description, InputSchema: def.Schema},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			args := req.Params.Arguments
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			a, err := desk.ask(deskRequest{Op: "submit", Args: args})
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Answer}}, IsError: a.Failed}, nil
		})
	return srv.Run(ctx, t)
}
