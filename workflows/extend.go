package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"
)

// extendKeys are the fields the extend update takes, in the order errors
// name them.
func extendKeys() []string { return []string{fieldMaxRounds, fieldMaxTokens, fieldMaxMinutes} }

// extension is a validated extend request: the new values (0: unchanged).
type extension struct {
	maxRounds, maxTokens, maxMinutes int
}

// parseExtend reads an extend request against the run as it is: each named
// budget must exist, stay within the deployment's ceiling, and not go down.
func (l *loop) parseExtend(raw json.RawMessage) (extension, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(bytes.TrimSpace(raw), &fields); err != nil || fields == nil {
		return extension{}, fmt.Errorf("extend takes a JSON object with some of %s", strings.Join(extendKeys(), ", "))
	}
	if len(fields) == 0 {
		return extension{}, fmt.Errorf("extend names nothing to raise (give some of %s)", strings.Join(extendKeys(), ", "))
	}
	if key := firstUnknown(fields, extendKeys()); key != "" {
		return extension{}, fmt.Errorf("extend: %s is not a known field (allowed: %s)", key, strings.Join(extendKeys(), ", "))
	}
	var x extension
	targets := []struct {
		field   string
		current int
		ceiling int
		setting string
		to      *int
	}{
		{fieldMaxRounds, l.maxRounds, l.limits.MaxRounds, "RALPH_MAX_ROUNDS", &x.maxRounds},
		{fieldMaxTokens, l.budget.MaxTokens, l.limits.MaxRunTokens, "RALPH_MAX_RUN_TOKENS", &x.maxTokens},
		{fieldMaxMinutes, l.budget.MaxMinutes, l.limits.MaxRunMinutes, "RALPH_MAX_RUN_MINUTES", &x.maxMinutes},
	}
	for _, tg := range targets {
		raw, ok := fields[tg.field]
		if !ok {
			continue
		}
		if tg.current == 0 {
			return extension{}, fmt.Errorf("extend: %s: the run has no such budget (it is unlimited), so there is nothing to raise", tg.field)
		}
		ceiling, name := tg.ceiling, "the deployment's ceiling "+tg.setting
		if ceiling == 0 {
			ceiling, name = maxJSONInt, "the largest budget accepted"
		}
		if tg.field == fieldMaxMinutes && ceiling > MaxBudgetMinutes {
			ceiling, name = MaxBudgetMinutes, "the largest time budget accepted: a later deadline overflows"
		}
		n, err := parseCount(tg.field, raw, ceiling, 0, name)
		var ie *InputError
		if errors.As(err, &ie) {
			return extension{}, fmt.Errorf("extend: %s: %s", ie.Field, ie.Problem)
		}
		if n < tg.current {
			return extension{}, fmt.Errorf("extend: %s: %d is lower than the run's %d; extend only raises", tg.field, n, tg.current)
		}
		*tg.to = n
	}
	return x, nil
}

func (l *loop) validateExtend(raw json.RawMessage) error {
	if l.status.Phase == PhaseFinished {
		return errors.New("the run has already finished")
	}
	_, err := l.parseExtend(raw)
	return err
}

// onExtend raises what the request names. The time budget counts from the
// run's start, so its deadline moves by the minutes added.
func (l *loop) onExtend(_ workflow.Context, raw json.RawMessage) (Ack, error) {
	x, err := l.parseExtend(raw)
	if err != nil {
		return Ack{}, err
	}
	if x.maxRounds > 0 {
		l.maxRounds = x.maxRounds
	}
	if x.maxTokens > 0 {
		l.budget.MaxTokens = x.maxTokens
	}
	if x.maxMinutes > 0 {
		l.budget.Deadline = l.budget.Deadline.Add(time.Duration(x.maxMinutes-l.budget.MaxMinutes) * time.Minute)
		l.budget.MaxMinutes = x.maxMinutes
	}
	return l.ack(), nil
}

// onDescribe answers with the bounded status in any phase: the update a
// starter sends with Update-with-Start to join a run already open.
func (l *loop) onDescribe(workflow.Context) (Status, error) {
	return l.snapshot(), nil
}
