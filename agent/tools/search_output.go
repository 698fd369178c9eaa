package tools

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// searchOutput lays out search results grep-style within the bounds:
// matches as "path:line: text", context lines as "path-line- text", and
// "--" between groups that are not adjacent. It keeps counting matches
// after it stops showing them, so the model learns how many it missed.
type searchOutput struct {
	outputCap int // code points of text at most
	context   int // lines shown on each side of a match

	text   strings.Builder
	runes  int
	total  int  // matches found
	shown  int  // matches shown
	capped bool // the output cap was reached: nothing more is shown
	wrote  bool // some line was written, so a new group needs a separator

	// The current file.
	name      string
	before    []numberedLine // up to context lines preceding the current one
	lastShown int            // number of the last line written, 0 if none
	after     int            // context lines still due after the last match
}

type numberedLine struct {
	no   int
	text string
}

func newSearchOutput(outputCap, context int) *searchOutput {
	return &searchOutput{outputCap: outputCap, context: context}
}

// startFile begins the lines of another file.
func (o *searchOutput) startFile(name string) {
	o.name, o.before, o.lastShown, o.after = name, o.before[:0], 0, 0
}

// line takes the next line of the current file.
func (o *searchOutput) line(no int, b []byte, matched bool) {
	if matched {
		o.total++
	}
	full := o.capped || o.shown >= SearchMaxMatches
	switch {
	case matched && !full:
		if o.writeGroup(no, string(b)) {
			o.shown++
			o.after = o.context
		}
	case matched:
		o.after = 0 // a match that is not shown ends the trailing context
	case o.after > 0 && !o.capped:
		o.after--
		o.write(no, string(b), '-')
	}
	if o.context > 0 {
		if len(o.before) == o.context {
			o.before = append(o.before[:0], o.before[1:]...)
		}
		o.before = append(o.before, numberedLine{no, string(b)})
	}
}

// writeGroup writes the context before the match at no that is not written
// yet, then the match. It reports whether the match was written.
func (o *searchOutput) writeGroup(no int, text string) bool {
	for _, l := range o.before {
		if l.no > o.lastShown && !o.write(l.no, l.text, '-') {
			return false
		}
	}
	return o.write(no, text, ':')
}

// write appends one line, preceded by a separator when context is shown
// and the line does not follow the previously written one. It reports
// false, and shows nothing more from then on, once the output cap would be
// passed.
func (o *searchOutput) write(no int, text string, mark byte) bool {
	if o.capped {
		return false
	}
	entry := fmt.Sprintf("%s%c%d%c %s\n", o.name, mark, no, mark, truncateRunes(strings.ToValidUTF8(text, "\uFFFD"), SearchMaxLineRunes))
	if o.context > 0 && o.wrote && (o.lastShown == 0 || no > o.lastShown+1) {
		entry = "--\n" + entry
	}
	n := utf8.RuneCountInString(entry)
	if o.runes+n > o.outputCap {
		o.capped = true
		return false
	}
	o.text.WriteString(entry)
	o.runes += n
	o.lastShown = no
	o.wrote = true
	return true
}
