package config

import (
	"fmt"
	"strings"
)

// SettingsTable renders every worker setting as the Markdown settings table
// of docs/reference.md: the settings are its only source, and a test keeps
// the page equal to it.
func SettingsTable() string {
	defaults := DefaultWorker()
	var b strings.Builder
	b.WriteString("| env | flag | default | meaning |\n|---|---|---|---|\n")
	for _, s := range workerSettings() {
		env, flagName := "(flag only)", "(env only)"
		if s.env != "" {
			env = "`" + s.env + "`"
		}
		if s.flag != "" {
			flagName = "`--" + s.flag + "`"
		}
		def := s.defaultText(&defaults)
		switch {
		case s.secret:
			def = "(secret: never logged)"
		case def == "" || def == "(none)":
			def = "(none)"
		default:
			def = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", env, flagName, def, strings.ReplaceAll(s.usage, "|", "\\|"))
	}
	return b.String()
}
