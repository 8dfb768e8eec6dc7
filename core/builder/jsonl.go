package builder

import (
	"fmt"
	"strings"

	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/jsonfile"
)

// jsonlPassage is one line of a JSON Lines passages file.
type jsonlPassage struct {
	SourceID   string  `json:"source_id"`
	Version    *string `json:"version"`
	URL        string  `json:"url"`
	Title      string  `json:"title"`
	Text       string  `json:"text"`
	TextSHA256 *string `json:"text_sha256"`
}

// readPassages reads a JSON Lines passages file: one JSON object a line
// (blank lines skipped) with source_id, url and text, and optionally
// version (else the build's), title and text_sha256 (checked when given,
// else computed). Every passage is checked as a pack's are; the first
// line that fails, or an id already taken by another document, skips the
// whole file with a reason naming the line, and takes no id.
func readPassages(d Document, version string, taken map[string]bool) ([]corpus.Passage, string) {
	if why := unreadable(d); why != "" {
		return nil, why
	}
	var out []corpus.Passage
	mine := map[string]bool{}
	for n, line := range strings.Split(strings.TrimPrefix(string(d.Data), "\ufeff"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var jp jsonlPassage
		// The strict reader every file goes through: unknown, repeated and
		// case-variant keys, and a second value, are refused.
		if err := jsonfile.Decode([]byte(line), &jp); err != nil {
			return nil, fmt.Sprintf("line %d: not a passage object (%v)", n+1, err)
		}
		p := corpus.Passage{SourceID: jp.SourceID, Version: version, URL: jp.URL, Title: jp.Title, Text: jp.Text, TextSHA256: corpus.SHA256(jp.Text)}
		if jp.Version != nil {
			p.Version = *jp.Version
		}
		if jp.TextSHA256 != nil {
			p.TextSHA256 = *jp.TextSHA256
		}
		if err := corpus.CheckPassage(p); err != nil {
			return nil, fmt.Sprintf("line %d (%q): %v", n+1, p.SourceID, err)
		}
		if taken[p.SourceID] || mine[p.SourceID] {
			return nil, fmt.Sprintf("line %d: source_id %q is already a passage's", n+1, p.SourceID)
		}
		mine[p.SourceID] = true
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, "no passage (a JSON object a line with source_id, url and text)"
	}
	for id := range mine {
		taken[id] = true
	}
	return out, ""
}
