package temporalserver

// QuietLogger is an SDK logger that drops everything: readiness probes
// against a starting server would otherwise log every refused dial.
type QuietLogger struct{}

func (QuietLogger) Debug(string, ...any) {}
func (QuietLogger) Info(string, ...any)  {}
func (QuietLogger) Warn(string, ...any)  {}
func (QuietLogger) Error(string, ...any) {}
