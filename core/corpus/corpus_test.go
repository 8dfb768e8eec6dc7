package corpus

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/fixtures"
)

func TestPinnedSnapshotLoads(t *testing.T) {
	s, err := Parse(fixtures.Snapshot)
	require.NoError(t, err)
	var ids []string
	for _, p := range s.Passages {
		ids = append(ids, p.SourceID+"@"+p.Version)
	}
	assert.Equal(t, []string{"json-text@3.12", "path-read@3.12", "path-write@3.12", "path-read-3-13@3.13"}, ids)
	p, ok := s.Passage("path-write")
	require.True(t, ok)
	assert.Equal(t, 224, p.Bytes())
	assert.Equal(t, "https://docs.python.org/3.12/library/pathlib.html#pathlib.Path.write_text", p.URL)
}

func TestSnapshotValidation(t *testing.T) {
	good := string(fixtures.Snapshot)
	for _, c := range []struct {
		name, from, to, want string
	}{
		{"edited text", "An existing file is overwritten.", "An existing file is kept.", "does not match the text"},
		{"repeated id", `"source_id": "path-read",`, `"source_id": "json-text",`, "repeats passage 1"},
		{"bad version", `"version": "3.13"`, `"version": "3.13.0"`, "not of the form"},
		{"bad id", `"source_id": "path-read",`, `"source_id": "Path Read",`, "source_id must be"},
		{"http url", `"url": "https://docs.python.org/3.12/library/json.html#json.dumps"`, `"url": "http://docs.python.org/"`, "not an absolute https URL"},
		{"other format", `"format": "ragagent-snapshot/1"`, `"format": "ragagent-snapshot/9"`, "format is"},
		{"unknown field", `"format": "ragagent-snapshot/1",`, `"format": "ragagent-snapshot/1", "extra": 1,`, "unknown field"},
		{"no passages", good[strings.Index(good, `"passages"`):], `"passages": []}`, "no passages"},
		{"truncated", good[len(good)-20:], "", "not a valid snapshot"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Contains(t, good, c.from)
			_, err := Parse([]byte(strings.Replace(good, c.from, c.to, 1)))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.True(t, strings.HasPrefix(err.Error(), "snapshot: "))
		})
	}
}

func TestValidVersion(t *testing.T) {
	for v, ok := range map[string]bool{"3.12": true, "10.0": true, "3": false, "3.": false, ".12": false, "3.12.1": false, "3.1a": false, "３.12": false, "": false} {
		assert.Equal(t, ok, ValidVersion(v), v)
	}
}

// TestAliasesValidation: a passage's aliases are other anchors of its own
// page, one row per refusal in checkAliases' order.
func TestAliasesValidation(t *testing.T) {
	const url = "https://docs.python.org/3.11/library/re.html#re.I"
	base := Passage{SourceID: "re-i", Version: "3.11", URL: url, Text: "Ignore case.", TextSHA256: SHA256("Ignore case.")}
	many := make([]string, MaxAliases+1)
	for i := range many {
		many[i] = "https://docs.python.org/3.11/library/re.html#a" + strings.Repeat("x", i)
	}
	for _, c := range []struct {
		name    string
		aliases []string
		want    string
	}{
		{"good", []string{"https://docs.python.org/3.11/library/re.html#re.IGNORECASE"}, ""},
		{"too many", many, "over the cap"},
		{"another page", []string{"https://docs.python.org/3.11/library/os.html#re.IGNORECASE"}, "of the page"},
		{"no fragment", []string{"https://docs.python.org/3.11/library/re.html"}, "with a #fragment"},
		{"not https", []string{"http://docs.python.org/3.11/library/re.html#x"}, "absolute https URL"},
		{"the URL itself", []string{url}, "repeats the URL"},
		{"repeated", []string{"https://docs.python.org/3.11/library/re.html#x", "https://docs.python.org/3.11/library/re.html#x"}, "repeats the URL or another alias"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := base
			p.Aliases = c.aliases
			err := CheckPassage(p)
			if c.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, c.want)
		})
	}
}
