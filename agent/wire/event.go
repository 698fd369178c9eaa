package wire

// Kinds of Event; the agent's transcript uses the same names.
const (
	EventError    = "model_error"
	EventProgress = "model_progress"
	EventFallback = "model_fallback"
)

// Event is what the wire tells the round while a call goes on: a failed
// attempt (EventError), a streamed answer's progress or a move to a
// fallback model. Fields
// not relevant to a kind are empty; Error never carries the API key.
type Event struct {
	Kind       string
	Step       int // the round's model call (1-based)
	Attempt    int
	Model      string
	HTTPStatus int
	Transient  bool
	Error      string
	RetryInMs  int64
	// EventProgress: characters of the answer streamed so far, and the
	// milliseconds from the request to its first one.
	StreamedChars int
	FirstTokenMs  int64
}
