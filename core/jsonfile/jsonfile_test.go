package jsonfile_test

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/core/pyjson"
)

type inner struct {
	Name string `json:"name"`
}

type embedded struct {
	Extra int `json:"extra"`
}

type doc struct {
	embedded
	A       int              `json:"a"`
	Entries []inner          `json:"entries"`
	Labels  map[string]inner `json:"labels"`
	Any     any              `json:"any"`
	Raw     json.RawMessage  `json:"raw"`
	Skip    int              `json:"-"`
}

// TestDecode: one row per refusal, in the order the reader makes them.
func TestDecode(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"not JSON", `{"a": `, "expecting value"},
		{"empty", ``, "expecting value"},
		{"trailing value", `{"a": 1} {}`, "extra data"},
		{"repeated key", `{"entries": [{"name": "x"}], "a": 1, "entries": []}`, `the key "entries" appears twice`},
		{"case variant keys", `{"entries": [], "ENTRIES": [{"name": "x"}]}`, `differ only in case`},
		{"case variants even as a map's keys", `{"labels": {"k": {}, "K": {}}}`, `differ only in case`},
		{"a case variant alone", `{"ENTRIES": []}`, `unknown field "ENTRIES" (keys are matched exactly: the field is "entries")`},
		{"a case variant deep inside", `{"entries": [{"Name": "x"}]}`, `unknown field "Name" in entries[0]`},
		{"inside a map value", `{"labels": {"k": {"NAME": "x"}}}`, `unknown field "NAME" in labels.k`},
		{"unknown key", `{"b": 1}`, `unknown field "b"`},
		{"a skipped field", `{"Skip": 1}`, `unknown field "Skip"`},
		{"wrong type", `{"a": "1"}`, "cannot unmarshal"},
		{"NaN", `{"a": NaN}`, "invalid character"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var v doc
			err := jsonfile.Decode([]byte(c.text), &v)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	var v doc
	require.NoError(t, jsonfile.Decode([]byte(` {"a": 1, "extra": 2, "entries": [{"name": "x"}], "labels": {"K": {"name": "y"}, "j": {"name": "z"}}, "any": {"X": 1}, "raw": {"Q": 1}} `), &v))
	assert.Equal(t, 1, v.A)
	assert.Equal(t, 2, v.Extra)
	assert.Equal(t, "x", v.Entries[0].Name)
	assert.Len(t, v.Labels, 2)
}

func TestValueIsStrictAndBounded(t *testing.T) {
	v, err := jsonfile.Value([]byte(`{"a": [1, NaN, "\ud800"]}`))
	require.NoError(t, err)
	assert.Equal(t, 1, v.(*pyjson.Object).Len())
	_, err = jsonfile.Value([]byte(`{"a": 1, "a": 2}`))
	assert.ErrorContains(t, err, "appears twice")
	tiny := "[" + strings.Repeat(`{"a":1},`, 1<<20) + `{"a":1}]`
	_, err = jsonfile.Value([]byte(tiny))
	var me *pyjson.MemoryError
	assert.ErrorAs(t, err, &me, "8 MB of tiny objects would take more than 16 times their size")
}

// TestAFileOfNumbersDecodesWithinTheBound: an 8 MB array of small numbers
// (the shape that took 8.4 GB for 200 MB) decodes, and the decoder
// allocates no more than the bound, 16 times the file plus 4 MiB (it
// takes about 8 times; BenchmarkDecodeMemory in core/pyjson reports it).
func TestAFileOfNumbersDecodesWithinTheBound(t *testing.T) {
	text := []byte("[" + strings.Repeat("1,", 4<<20) + "1]")
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	v, err := jsonfile.Value(text)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	assert.Len(t, v, 4<<20+1)
	allocated := after.TotalAlloc - before.TotalAlloc
	assert.LessOrEqual(t, allocated, uint64(jsonfile.MemoryFactor*len(text)+jsonfile.MemoryAllowance))
	t.Logf("%d bytes of numbers: %.1f bytes allocated per byte", len(text), float64(allocated)/float64(len(text)))
}
