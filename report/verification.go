package report

// MaxVerificationOutput bounds Verification.Output in code points (head and
// tail kept): the record crosses into history and the next prompt.
const MaxVerificationOutput = 4000

// Verification is the record of a verify command the round itself ran after
// the model submitted a complete report. ExitCode is -1 when it timed out.
type Verification struct {
	Command    string `json:"command"`
	ExitCode   int    `json:"exitCode"`
	DurationMs int64  `json:"durationMs"`
	Output     string `json:"output"`
	// ProtectedChanged names the protected paths the command itself changed
	// (found after it, and restored; comma-separated, bounded): such a run
	// fails whatever it exited, so no verify passes by rewriting the tests
	// it runs. Set only by the worker's verify of a tree (a campaign's
	// merge, a candidate's score). A string keeps the record comparable.
	ProtectedChanged string `json:"protectedChanged,omitempty"`
}

// Passed reports whether the verification accepts a completion.
func (v *Verification) Passed() bool {
	return v != nil && v.ExitCode == 0 && v.ProtectedChanged == ""
}
