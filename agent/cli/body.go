package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
)

// A request body is read once into one buffer and split into its top-level
// members without copying them (docs/security.md: never held whole in memory more
// than once); it goes upstream as a reader over those same bytes.

// errTooLarge: the body passes RALPH_AGENT_MAX_REQUEST_MB.
var errTooLarge = errors.New("the request body is too large")

// readBody reads r's body, at most limit bytes.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, errTooLarge
	}
	rd := http.MaxBytesReader(w, r.Body, limit)
	var raw []byte
	var err error
	if r.ContentLength >= 0 {
		raw = make([]byte, r.ContentLength)
		_, err = io.ReadFull(rd, raw)
	} else {
		raw, err = io.ReadAll(rd)
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, errTooLarge
	}
	return raw, err
}

// splitObject is raw's top-level members, each value a slice of raw.
func splitObject(raw []byte) (map[string]json.RawMessage, error) {
	if !json.Valid(raw) {
		return nil, errors.New("not JSON")
	}
	i := skipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return nil, errors.New("not a JSON object")
	}
	out := map[string]json.RawMessage{}
	for i = skipSpace(raw, i+1); raw[i] != '}'; i = skipSpace(raw, i+1) {
		end := skipValue(raw, i)
		var key string
		if err := json.Unmarshal(raw[i:end], &key); err != nil {
			return nil, err
		}
		start := skipSpace(raw, skipSpace(raw, end)+1) // past the colon
		end = skipValue(raw, start)
		out[key] = raw[start:end:end]
		if i = skipSpace(raw, end); raw[i] == '}' {
			break
		}
	}
	return out, nil
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// skipValue is the end of the (valid) JSON value at i.
func skipValue(raw []byte, i int) int {
	depth, inString := 0, false
	for j := i; j < len(raw); j++ {
		c := raw[j]
		switch {
		case inString && c == '\\':
			j++
		case inString:
			inString = c != '"'
			if !inString && depth == 0 {
				return j + 1
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return j // the end of a bare value before its container's end
			}
			if depth--; depth == 0 {
				return j + 1
			}
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return j
		}
	}
	return len(raw)
}

// objectReader is body as JSON, reading each member's value where it lies,
// and its length.
func objectReader(body map[string]json.RawMessage) (io.Reader, int64) {
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range body {
			if !yield(k) {
				return
			}
		}
	})
	var parts []io.Reader
	var n int64
	add := func(b []byte) {
		parts = append(parts, bytes.NewReader(b))
		n += int64(len(b))
	}
	add([]byte("{"))
	for i, k := range keys {
		name, _ := json.Marshal(k)
		if i > 0 {
			add([]byte(","))
		}
		add(append(name, ':'))
		add(body[k])
	}
	add([]byte("}"))
	return io.MultiReader(parts...), n
}

// lowerOutput lowers each output-token field of body to limit (fields
// names them; the first is set when none is there).
func lowerOutput(body map[string]json.RawMessage, limit int, fields []string) {
	set := false
	for _, f := range fields {
		raw, ok := body[f]
		if !ok {
			continue
		}
		set = true
		if n, err := strconv.Atoi(string(bytes.TrimSpace(raw))); err != nil || n > limit {
			body[f] = json.RawMessage(strconv.Itoa(limit))
		}
	}
	if !set {
		body[fields[0]] = json.RawMessage(strconv.Itoa(limit))
	}
}

// onlyOne refuses an n other than 1 (several choices would each cost
// what one does, uncounted).
func onlyOne(body map[string]json.RawMessage) error {
	raw, ok := body["n"]
	if !ok || string(bytes.TrimSpace(raw)) == "1" || string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	return fmt.Errorf("n=%s: the gateway forwards one answer per request (n must be 1)", bytes.TrimSpace(raw))
}
