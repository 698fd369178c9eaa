package tools

import (
	"bytes"
	"embed"
	"fmt"
	"text/template"
)

// descriptionFiles holds one description template per tool, named after
// the tool, so a change to what the model is told is a text diff.
//
//go:embed *.tmpl
var descriptionFiles embed.FS

// descriptionTemplates is parsed once (like the session's prompts) and only
// ever read; every workspace fills it with its own limits.
var descriptionTemplates = template.Must(template.New("tools").Option("missingkey=error").ParseFS(descriptionFiles, "*.tmpl"))

// descriptionData is what the description templates may refer to: the
// workspace's effective limits and the tools' fixed bounds.
type descriptionData struct {
	OutputCap                int
	CommandTimeoutSeconds    string
	MaxCommandTimeoutSeconds string
	ReadLineLimit            int
	ReadByteCap              string
	ReadMaxLineRunes         int
	LineCutMarker            string
	ListMaxEntries           int
	ListMaxIgnoredNames      int
	SearchMaxMatches         int
	SearchMaxContext         int
	SearchMaxLineRunes       int
	SearchMaxFileMiB         int
}

// newDescriptionData fills the template data from effective limits.
func newDescriptionData(l Limits) descriptionData {
	return descriptionData{
		OutputCap:                l.OutputCap,
		CommandTimeoutSeconds:    fmt.Sprintf("%g", l.CommandTimeout.Seconds()),
		MaxCommandTimeoutSeconds: fmt.Sprintf("%g", l.MaxCommandTimeout.Seconds()),
		ReadLineLimit:            l.ReadLineLimit,
		ReadByteCap:              byteSize(l.ReadByteLimit),
		ReadMaxLineRunes:         ReadMaxLineRunes,
		LineCutMarker:            lineCutMarker(),
		ListMaxEntries:           ListMaxEntries,
		ListMaxIgnoredNames:      ListMaxIgnoredNames,
		SearchMaxMatches:         SearchMaxMatches,
		SearchMaxContext:         SearchMaxContext,
		SearchMaxLineRunes:       SearchMaxLineRunes,
		SearchMaxFileMiB:         SearchMaxFileBytes >> 20,
	}
}

// renderDescription fills the template of the named tool.
func renderDescription(name string, data descriptionData) (string, error) {
	var b bytes.Buffer
	if err := descriptionTemplates.ExecuteTemplate(&b, name+".tmpl", data); err != nil {
		return "", fmt.Errorf("filling the description of %s: %w", name, err)
	}
	return string(bytes.TrimSpace(b.Bytes())), nil
}

// byteSize words a byte count the way people read it.
func byteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}
