package agent

import (
	"slices"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/internal/runes"
)

// MaxCompactedCallChars bounds the tool-call list of a compacted request
// (names and arguments, code points in all).
const MaxCompactedCallChars = 4000

// compactedCutMarker ends a call entry cut to fit the list's bound.
const compactedCutMarker = " …"

// minCompactedEntry is the least room worth filling with a cut entry.
const minCompactedEntry = 40

type compactedData struct {
	Calls   []string
	Omitted int
	Notice  string
}

// compact replaces the conversation by the smallest request that can still
// end the round well: the system prompt, the round prompt and one user
// message listing the tool calls made so far and the hand-off notice for
// bound. It is the one exception to "the conversation is only appended to",
// taken when the conversation no longer fits; it happens at most once.
func (s *session) compact(bound string) error {
	// The notice's remaining amounts describe the new, short conversation.
	s.conv.restart(2)
	s.bounds.compact(bound)
	notice, err := s.handoffNotice(bound, s.finishingRequestTokens())
	if err != nil {
		return err
	}
	calls, omitted := compactCallList(s.conv.callLog, MaxCompactedCallChars)
	text, err := render(textCompacted, compactedData{Calls: calls, Omitted: omitted, Notice: notice})
	if err != nil {
		return err
	}
	s.conv.appendUser(text)
	return nil
}

// compactCallList keeps the newest entries whose code points fit within
// limit in all (the newest one cut to fit when nothing else would), oldest
// first, and says how many older ones were left out.
func compactCallList(log []string, limit int) ([]string, int) {
	var kept []string
	room := limit
	i := len(log) - 1
	for ; i >= 0; i-- {
		n := utf8.RuneCountInString(log[i])
		if n <= room {
			kept = append(kept, log[i])
			room -= n
			continue
		}
		if room >= minCompactedEntry {
			cut := room - utf8.RuneCountInString(compactedCutMarker)
			kept = append(kept, runes.Prefix(log[i], cut)+compactedCutMarker)
			i--
		}
		break
	}
	slices.Reverse(kept)
	return kept, i + 1
}
