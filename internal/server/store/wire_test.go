package store_test

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ragagentlab/ragagent/internal/server/store"
)

var update = flag.Bool("update", false, "rewrite testdata/wire-batch.bin from wireBatch")

// wireBatch is the batch both halves of the D1 wire form are held to:
// this test writes it (testdata/wire-batch.bin, golden) and
// tests/node/d1wire.test.mjs reads it with worker/d1wire.mjs and compares
// the statements with testdata/wire-batch.json.
var wireBatch = []store.Statement{
	{SQL: `SELECT 1`},
	{SQL: `INSERT INTO events (run_id, seq, type, data, at) VALUES (?1, ?2, ?3, ?4, ?5)`,
		Args: []any{"run_1", 7, "step", "{\"q\": \"é 𝄞 \u2028 \\\"quoted\\\" \\\\\"}", nil}},
	{SQL: `SELECT ?1, ?2, ?3, ?4, ?5`, Args: []any{int64(-1 << 53), 1 << 53, 0.25, "", "\xff not UTF-8"}},
}

func TestAppendBatchIsTheGolden(t *testing.T) {
	got, err := store.AppendBatch(nil, wireBatch)
	require.NoError(t, err)
	path := filepath.Join("testdata", "wire-batch.bin")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "make the golden with go test -run TestAppendBatchIsTheGolden -update")
	assert.Equal(t, want, got)
}

func TestAppendBatchRefusesWhatD1CannotBind(t *testing.T) {
	for _, tc := range []struct {
		name string
		arg  any
		want string
	}{
		{"a bool", true, "statement 1, argument 2: a bool is not a D1 value"},
		{"bytes", []byte("x"), "a []uint8 is not a D1 value"},
		{"an int past 2^53", 1<<53 + 1, "past what a JS number holds exactly"},
		{"an int64 under -2^53", int64(-1<<53 - 1), "past what a JS number holds exactly"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := store.AppendBatch(nil, []store.Statement{{SQL: "SELECT ?1, ?2", Args: []any{"ok", tc.arg}}})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestDecodeResultsReadsWhatTheJSHalfWrites: testdata/wire-results.bin is
// what worker/d1wire.mjs's encodeResults writes for the rows of
// testdata/wire-results.json (tests/node/d1wire.test.mjs holds it to
// that); read back, they are those rows, numbers as float64 and a lone
// surrogate as U+FFFD, as the Worker's Go program gets them.
func TestDecodeResultsReadsWhatTheJSHalfWrites(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "wire-results.json"))
	require.NoError(t, err)
	var want []store.Rows
	require.NoError(t, json.Unmarshal(data, &want))
	bin, err := os.ReadFile(filepath.Join("testdata", "wire-results.bin"))
	require.NoError(t, err)
	got, err := store.DecodeResults(bin)
	require.NoError(t, err)
	require.Len(t, got, len(want))
	for i := range want {
		if len(want[i]) == 0 {
			assert.Empty(t, got[i], "result %d", i)
			continue
		}
		assert.Equal(t, want[i], got[i], "result %d", i)
	}
}

func TestDecodeResultsRefusesWhatIsNotTheWireForm(t *testing.T) {
	u32 := func(n uint32) []byte { return []byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24)} }
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "cut short"},
		{"a count cut short", []byte{1, 0}, "cut short"},
		{"a result count past the end", u32(1 << 30), "past the buffer's end"},
		{"a row count past the end", cat(u32(1), u32(5)), "past the buffer's end"},
		{"a column count past the end", cat(u32(1), u32(1), u32(1)), "a count of 1 past the buffer's end"},
		{"an unknown tag", cat(u32(1), u32(1), u32(1), []byte{9}), "a value tagged 9"},
		{"a number cut short", cat(u32(1), u32(1), u32(1), []byte{1, 0, 0}), "cut short"},
		{"a string past the end", cat(u32(1), u32(1), u32(1), []byte{2}, u32(4), []byte("ab")), "past the buffer's end"},
		{"a string not UTF-8", cat(u32(1), u32(1), u32(1), []byte{2}, u32(1), []byte{0xff}), "not UTF-8"},
		{"bytes left over", cat(u32(0), []byte{0}), "1 bytes after the results"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := store.DecodeResults(tc.in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// FuzzDecodeResults: any buffer is read or refused, never a panic, and no
// count makes more values than the buffer has bytes.
func FuzzDecodeResults(f *testing.F) {
	if bin, err := os.ReadFile(filepath.Join("testdata", "wire-results.bin")); err == nil {
		f.Add(bin)
	}
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		rs, err := store.DecodeResults(in)
		if err != nil {
			return
		}
		values := 0
		for _, rows := range rs {
			for _, row := range rows {
				values += len(row)
				for _, v := range row {
					switch x := v.(type) {
					case nil, string:
					case float64:
						_ = math.IsNaN(x)
					default:
						t.Fatalf("a %T value", v)
					}
				}
			}
		}
		assert.LessOrEqual(t, values, len(in))
	})
}
