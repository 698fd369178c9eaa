package bench

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/app/config"
	"github.com/ralph-temporal/ralph/app/traces"
	"github.com/ralph-temporal/ralph/devenv/testkit"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
	"github.com/ralph-temporal/ralph/internal/tracing"
)

// BenchmarkRoundTracing is the per-round cost of tracing: RunRound (as in
// BenchmarkRunRoundInstantModel) with a round of four model calls and three
// tool calls (list_files, write_file, read_file, then submit_report), with
// tracing off and on. On, every span goes through the worker's own
// provider (batch span processor, OTLP/HTTP exporter) to an OTLP receiver
// on loopback that decodes each export. Run:
// go test -run '^$' -bench RoundTracing -benchtime 200x -count 5 ./devenv/bench/
func BenchmarkRoundTracing(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) { benchRoundTracing(b, on) })
	}
}

func benchRoundTracing(b *testing.B, on bool) {
	model := fakeopenai.NewServer(fakeopenai.Script{Rule: func(req fakeopenai.Request) fakeopenai.Response {
		switch req.Step() {
		case 0:
			return fakeopenai.Tools(fakeopenai.CallJSON("list_files", map[string]string{}))
		case 1:
			return fakeopenai.Tools(fakeopenai.CallJSON("write_file", map[string]string{"path": "notes.txt", "content": "tracing benchmark\n"}))
		case 2:
			return fakeopenai.Tools(fakeopenai.CallJSON("read_file", map[string]string{"path": "notes.txt"}))
		default:
			return submitContinue("round done")
		}
	}})
	defer model.Close()
	rcv := testkit.NewOTLPReceiver()
	defer rcv.Close()
	extra := config.MapEnv{}
	if on {
		extra[config.EnvOTLPEndpoint] = rcv.Endpoint()
	}
	cfg := roundWorkerConfig(b, model, extra)
	tp, err := traces.Start(context.Background(), cfg.Tracing)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Activities.Agent.Tracing = tp.Options()
	run := roundRunner(b, cfg)
	cpuBefore := processCPU(b)
	for i := 0; b.Loop(); i++ {
		if _, err := run("benchmark one traced round", fmt.Sprintf("ws-%d", i%8)); err != nil {
			b.Fatal(err)
		}
	}
	// The export is part of the cost: flush inside the timed loop's budget.
	if err := tp.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	// CPU time (user+sys of the whole process: the session, the scripted
	// model and, when on, the exporter and the receiver decoding every
	// export) is steadier than wall time on a loaded machine.
	b.ReportMetric(float64((processCPU(b)-cpuBefore).Microseconds())/1000/float64(b.N), "cpu-ms/round")
	if on {
		want := b.N * 9 // ralph.round, 4 chat, 4 execute_tool (submit_report included)
		if got := len(rcv.Spans()); got < want {
			b.Fatalf("the receiver got %d spans for %d rounds, want at least %d", got, b.N, want)
		}
		b.ReportMetric(float64(len(rcv.Spans()))/float64(b.N), "spans/round")
	}
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRoundSpans is the tracing work of one such round alone: the nine
// spans with their attributes (a round, four model calls, four tool calls)
// through the worker's provider, batch processor and OTLP/HTTP exporter to
// a loopback receiver (flushed at the end, inside the timing). Run:
// go test -run '^$' -bench RoundSpans -benchtime 200x -count 5 ./devenv/bench/
func BenchmarkRoundSpans(b *testing.B) {
	rcv := testkit.NewOTLPReceiver()
	defer rcv.Close()
	tp, err := traces.Start(context.Background(), config.Tracing{Enabled: true, Endpoint: rcv.Endpoint() + "/v1/traces",
		Protocol: config.ProtocolHTTPProtobuf, ServiceName: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	o := tp.Options()
	for b.Loop() {
		ctx, round := o.Start(context.Background(), tracing.SpanRound, tracing.AttrRound.Int(1), tracing.AttrWorkspace.String("ws"),
			tracing.AttrSessionID.String("0123456789abcdef"))
		for i := range 4 {
			_, chat := o.StartChat(ctx, "bench-model")
			chat.SetAttributes(tracing.AttrResponseModel.String("bench-model"), tracing.AttrResponseID.String("chatcmpl-1"),
				tracing.AttrFinishReasons.StringSlice([]string{"tool_calls"}), tracing.AttrInputTokens.Int(3000+i), tracing.AttrOutputTokens.Int(40))
			chat.End()
			_, tool := o.StartTool(ctx, "read_file", "call_1_0")
			tool.End()
		}
		round.SetAttributes(tracing.AttrReportStatus.String("continue"))
		round.End()
	}
	if err := tp.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
	// The batch queue holds 2048 spans: past it the SDK drops spans rather
	// than slow the round, which this metric would show.
	b.ReportMetric(float64(len(rcv.Spans()))/float64(b.N), "exported-spans/round")
}
