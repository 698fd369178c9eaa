package tools

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ralph-temporal/ralph/internal/runes"
)

// TruncateHeadTail returns s unchanged if it has at most limit code points.
// Otherwise it keeps the first headShare(limit) and the last limit-headShare(limit)
// code points and puts a marker saying how many characters were cut in between:
// the start of output shows what ran, the end shows how it finished, and the
// middle is usually the least informative part. A limit <= 0 cuts everything.
func TruncateHeadTail(s string, limit int) string {
	n := utf8.RuneCountInString(s)
	if n <= limit {
		return s
	}
	if limit < 0 {
		limit = 0
	}
	headKeep := headShare(limit)
	tailKeep := limit - headKeep
	return joinHeadTail(runes.Prefix(s, headKeep), n-headKeep-tailKeep, runes.Suffix(s, tailKeep))
}

// headShare is the head's share of a cut output: two fifths. The end says how
// a command finished (a failing test, an exit message), so it gets the larger
// share: a verify record's 3,900 code points keep the last 2,340, more than
// the 2,000 a task sent back must see of its merge verify (SPEC 39).
func headShare(limit int) int { return limit * 2 / 5 }

// joinHeadTail puts the cut marker between the kept head and tail.
func joinHeadTail(head string, cut int, tail string) string {
	var b strings.Builder
	b.WriteString(head)
	fmt.Fprintf(&b, "\n[... %d characters cut from the middle of the output ...]\n", cut)
	b.WriteString(tail)
	return b.String()
}

// headTailBuffer is an io.Writer that keeps the first and the last bytes of
// a possibly unbounded stream (a command printing forever until its timeout)
// in bounded memory, counting the code points dropped in between.
type headTailBuffer struct {
	headCap, tailCap int
	head, tail       []byte
	droppedRunes     int
}

// newHeadTailBuffer sizes the buffer so that it always holds at least limit
// code points at each end (a code point is at most utf8.UTFMax bytes).
func newHeadTailBuffer(limit int) *headTailBuffer {
	c := max(limit, 1) * utf8.UTFMax
	return &headTailBuffer{headCap: c, tailCap: c}
}

func (b *headTailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := b.headCap - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	b.tail = append(b.tail, p...)
	// Compact only when twice the cap, so copying stays amortised O(1).
	if len(b.tail) > 2*b.tailCap {
		drop := len(b.tail) - b.tailCap
		b.droppedRunes += countRuneStarts(b.tail[:drop])
		b.tail = b.tail[:copy(b.tail, b.tail[drop:])]
	}
	return n, nil
}

// countRuneStarts counts code points in b by their first bytes, which stays
// correct when b begins or ends in the middle of a character.
func countRuneStarts(b []byte) int {
	n := 0
	for _, c := range b {
		if utf8.RuneStart(c) {
			n++
		}
	}
	return n
}

// String renders the captured output truncated head+tail to limit code
// points, with invalid UTF-8 replaced so the model gets clean text.
func (b *headTailBuffer) String(limit int) string {
	if b.droppedRunes == 0 {
		return TruncateHeadTail(strings.ToValidUTF8(string(b.head)+string(b.tail), "\uFFFD"), limit)
	}
	headBytes := trimPartialRune(b.head)
	cut := b.droppedRunes
	if len(headBytes) < len(b.head) {
		cut++ // the character split at the end of head; its start was not counted
	}
	head := strings.ToValidUTF8(string(headBytes), "\uFFFD")
	tail := strings.ToValidUTF8(string(trimLeadingContinuation(b.tail)), "\uFFFD")
	headKeep := headShare(limit)
	tailKeep := limit - headKeep
	cut += utf8.RuneCountInString(head) - headKeep + utf8.RuneCountInString(tail) - tailKeep
	return joinHeadTail(runes.Prefix(head, headKeep), cut, runes.Suffix(tail, tailKeep))
}

// trimLeadingContinuation drops the continuation bytes of a character whose
// start was discarded.
func trimLeadingContinuation(b []byte) []byte {
	for i := 0; i < len(b) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}
