package pyjson

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDecodeWithUniqueKeys: a file the project reads may not repeat a key
// (json.loads keeps the last value, so an earlier one would be silently
// dropped) nor hold two keys that differ only in case (encoding/json
// matches keys case-insensitively, the last winning). Decode, for model
// replies, still behaves as json.loads.
func TestDecodeWithUniqueKeys(t *testing.T) {
	many := func(extra string) string {
		var b strings.Builder
		b.WriteString(`{`)
		for i := range 20 {
			fmt.Fprintf(&b, `"key%d": %d, `, i, i)
		}
		return b.String() + extra + `}`
	}
	for _, c := range []struct{ name, text, want string }{
		{"repeated key", `{"entries": [], "budget": 1, "entries": [1]}`, `the key "entries" appears twice`},
		{"repeated through an escape", `{"a": 1, "\u0061": 2}`, `the key "a" appears twice`},
		{"repeated deep inside", `[{"x": {"y": 1, "y": 1}}]`, `the key "y" appears twice`},
		{"case variant", `{"entries": [], "ENTRIES": []}`, `the keys "entries" and "ENTRIES" of one object differ only in case`},
		{"case variant among many", many(`"KEY7": 0`), `differ only in case`},
		{"Kelvin sign folds to k", `{"k": 1, "\u212a": 2}`, `differ only in case`},
		{"long s folds to s", many(`"\u017f": 1, "S": 2`), `differ only in case`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeWith(c.text, DecodeOptions{UniqueKeys: true})
			var se *SyntaxError
			require.ErrorAs(t, err, &se)
			assert.Contains(t, err.Error(), c.want)
			_, err = DecodeWith(c.text, DecodeOptions{UniqueKeys: true, MaxMemory: 1 << 30})
			assert.ErrorContains(t, err, c.want, "the same with a memory bound")
			_, err = Decode(c.text)
			assert.NoError(t, err, "json.loads accepts it")
		})
	}
	for _, ok := range []string{`{"a": 1, "b": {"a": 2}}`, many(`"other": 1`), `{"ß": 1, "ss": 2}`, `[{"a": 1}, {"a": 2}]`} {
		_, err := DecodeWith(ok, DecodeOptions{UniqueKeys: true, MaxMemory: 1 << 30})
		assert.NoError(t, err, ok)
	}
}

// shapes make texts of about size bytes of one big list of tiny values,
// the worst cases for a decoder's memory, and ordinary ones.
func shapes(size int) map[string]func() string {
	list := func(item func(i int) string) func() string {
		return func() string {
			var b strings.Builder
			b.WriteString("[")
			for i := 0; b.Len() < size; i++ {
				if i > 0 {
					b.WriteString(",")
				}
				b.WriteString(item(i))
			}
			return b.String() + "]"
		}
	}
	return map[string]func() string{
		"small numbers":    list(func(int) string { return "1" }),
		"numbers":          list(func(i int) string { return fmt.Sprint(i*7919, ".25") }),
		"short strings":    list(func(int) string { return `"a"` }),
		"escaped strings":  list(func(i int) string { return `"line\nbreak \u00e9 \ud83d\ude00"` }),
		"empty objects":    list(func(int) string { return `{}` }),
		"small objects":    list(func(i int) string { return fmt.Sprintf(`{"id": %d, "text": "abc"}`, i) }),
		"tiny objects":     list(func(int) string { return `{"a":1}` }),
		"nine-key objects": list(func(int) string { return `{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1}` }),
		"empty lists":      list(func(int) string { return `[]` }),
		"one wide object": func() string {
			return "{" + strings.Trim(list(func(i int) string { return fmt.Sprintf(`"k%d": %d`, i, i) })(), "[]") + "}"
		},
	}
}

// allocated is the bytes the heap handed out while f ran.
func allocated(f func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestCostBoundsWhatDecodingAllocates: with a MaxMemory, decoding
// allocates no more than its first pass counted (Cost), whatever the
// shape, so refusing a text whose Cost passes the bound really bounds the
// memory taken; and the value is the one Decode gives.
func TestCostBoundsWhatDecodingAllocates(t *testing.T) {
	for name, shape := range shapes(256 << 10) {
		t.Run(name, func(t *testing.T) {
			text := shape()
			strict := DecodeOptions{UniqueKeys: true}
			cost, err := Cost(text, strict)
			require.NoError(t, err)
			strict.MaxMemory = cost
			var v any
			got := allocated(func() { v, err = DecodeWith(text, strict) })
			require.NoError(t, err)
			assert.LessOrEqual(t, got, uint64(cost)+64<<10, "allocated %d bytes, counted %d", got, cost)
			plain, err := Decode(text)
			require.NoError(t, err)
			assert.True(t, Equal(plain, v))
		})
	}
}

// TestMaxMemoryRefusesBeforeBuilding: a text whose value would take more
// than MaxMemory is refused by the first pass, which allocates next to
// nothing beside the containers' lengths.
func TestMaxMemoryRefusesBeforeBuilding(t *testing.T) {
	text := shapes(1 << 20)["tiny objects"]()
	var err error
	got := allocated(func() { _, err = DecodeWith(text, DecodeOptions{MaxMemory: 16 * int64(len(text))}) })
	var me *MemoryError
	require.ErrorAs(t, err, &me)
	assert.Greater(t, me.Need, me.Max)
	assert.Contains(t, err.Error(), "MB of memory")
	assert.Less(t, got, uint64(len(text)), "nothing was built")
	_, err = DecodeWith(`[1, 2`, DecodeOptions{MaxMemory: 1})
	var se *SyntaxError
	assert.True(t, errors.As(err, &se), "a syntax error is reported as one: %v", err)
}

// BenchmarkDecodeMemory reports, for each worst-case shape of a 4 MB text,
// the bytes decoding allocates per byte of text (B/text-B), with the
// bound a file reader uses (jsonfile) and without any (Decode).
func BenchmarkDecodeMemory(b *testing.B) {
	for name, shape := range shapes(4 << 20) {
		text := shape()
		for _, bounded := range []bool{false, true} {
			label := name + "/Decode"
			if bounded {
				label = name + "/bounded"
			}
			b.Run(label, func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				b.ReportAllocs()
				var total uint64
				for b.Loop() {
					total += allocated(func() {
						if bounded {
							_, _ = DecodeWith(text, DecodeOptions{UniqueKeys: true, MaxMemory: 1 << 40})
						} else {
							_, _ = Decode(text)
						}
					})
				}
				b.ReportMetric(float64(total)/float64(b.N)/float64(len(text)), "B/text-B")
			})
		}
	}
}
