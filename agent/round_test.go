package agent_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/ralph-temporal/ralph/agent"
	"github.com/ralph-temporal/ralph/internal/fakeopenai"
)

// A Desk opens its round as the builtin session does (one opening): the
// same round prompt, the same session_start, the same refusal of a bad
// request.
func TestDeskOpensAsTheSession(t *testing.T) {
	h := newHarness(t, fakeopenai.Script{Queue: []fakeopenai.Response{submit(validContinue)}})
	if _, err := h.run(); err != nil {
		t.Fatalf("RunSession: %v", err)
	}
	deskEvents := &eventLog{}
	d, err := agent.OpenDesk(h.cfg, h.req, deskEvents)
	if err != nil {
		t.Fatalf("OpenDesk: %v", err)
	}
	if _, err := d.Close(context.Background(), nil); !agent.IsChildFailure(err) {
		t.Errorf("Close without a report = %v, want a child failure", err)
	}
	first := h.requests()[0].Chat.Messages
	if want := first[0].Content + "\n\n" + first[1].Content; d.Prompt() != want {
		t.Errorf("desk prompt differs from the session's first messages:\n%s\nwant\n%s", d.Prompt(), want)
	}
	sessionStart, deskStart := h.events.ofKind(agent.EventSessionStart), deskEvents.ofKind(agent.EventSessionStart)
	if len(sessionStart) != 1 || len(deskStart) != 1 {
		t.Fatalf("session_start events: session %d, desk %d, want 1 each", len(sessionStart), len(deskStart))
	}
	sessionStart[0].Time, deskStart[0].Time = time.Time{}, time.Time{}
	if sessionStart[0].BaseURL == "" || !reflect.DeepEqual(sessionStart[0], deskStart[0]) {
		t.Errorf("session_start: session %+v, desk %+v", sessionStart[0], deskStart[0])
	}

	bad := h.req
	bad.Objective = ""
	_, sessionErr := agent.RunSession(context.Background(), h.cfg, bad, nil)
	_, deskErr := agent.OpenDesk(h.cfg, bad, nil)
	if sessionErr == nil || deskErr == nil || sessionErr.Error() != deskErr.Error() {
		t.Errorf("a request without objective: RunSession %v, OpenDesk %v, want the same error", sessionErr, deskErr)
	}
}
