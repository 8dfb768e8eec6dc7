package pyjson

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type code string

type inner struct {
	X int    `json:"x"`
	Y string `json:"y,omitempty"`
}

type tagged struct {
	B       int    `json:"b"`
	A       string `json:"a"`
	Untaged bool
	Skipped string `json:"-"`
	Dash    string `json:"-,"`
	hidden  int
}

type embeds struct {
	First string `json:"first"`
	inner
	Last string `json:"last"`
}

type embedsPointer struct {
	ID string `json:"id"`
	*inner
}

type shadow struct {
	X string `json:"x"` // shallower than inner.X: wins
	inner
}

type left struct {
	Name string
}

type right struct {
	Name string
}

type conflict struct { // one name twice at one depth, neither tagged: neither is written
	left
	right
	Kept int `json:"kept"`
}

type taggedWins struct { // one name at one depth, one of them tagged: the tagged one is written
	withTag
	Name int
}

type withTag struct {
	N int `json:"Name"`
}

type twiceA struct{ inner }

type twiceB struct{ inner }

type twice struct { // inner reached twice at one depth: its names are dropped
	twiceA
	twiceB
	K int `json:"k"`
}

type deep struct { // a shallower embedded field wins over a deeper one
	embeds
	Y string `json:"y"`
}

type nested struct {
	Inner inner `json:"inner"`
}

type named struct {
	Code  code   `json:"code"`
	Small int8   `json:"small"`
	Big   uint64 `json:"big"`
}

type empties struct {
	S   string         `json:"s,omitempty"`
	I   int            `json:"i,omitempty"`
	F   float64        `json:"f,omitempty"`
	B   bool           `json:"b,omitempty"`
	P   *int           `json:"p,omitempty"`
	A   any            `json:"a,omitempty"`
	L   []int          `json:"l,omitempty"`
	M   map[string]int `json:"m,omitempty"`
	O   *Object        `json:"o,omitempty"`
	St  inner          `json:"st,omitempty"` // a struct is never empty
	Z   inner          `json:"z,omitzero"`
	Set string         `json:"set,omitempty"`
}

type nils struct {
	P    *int           `json:"p"`
	A    any            `json:"a"`
	L    []string       `json:"l"`
	M    map[string]int `json:"m"`
	Null []int          `json:"null" pyjson:"nullable"`
	NonN []int          `json:"nonnull" pyjson:"nullable"`
	NM   map[string]int `json:"null_map" pyjson:"nullable"`
}

type floats struct {
	F []float64 `json:"f"`
}

type values struct {
	O *Object `json:"o"`
	N Number  `json:"n"`
	A any     `json:"a"`
	L []any   `json:"l"`
}

type custom struct{ hit bool }

func (c custom) MarshalPyJSON() any {
	if c.hit {
		return NewObject("hit", true, "rank", 1)
	}
	return NewObject("hit", nil)
}

type selfish struct{}

func (s selfish) MarshalPyJSON() any { return s }

type stringOption struct {
	N int `json:"n,string"`
}

type cycle struct {
	Next *cycle `json:"next"`
}

type shim struct {
	Text string `json:"text"`
	F    float64
}

func (s shim) MarshalJSON() ([]byte, error) { return MarshalJSON(s) }

func TestMarshalWritesStructsAsTheirTagsSay(t *testing.T) {
	seven := 7
	lone := "\xed\xa0\x80" // a lone surrogate as decoded text holds it
	for _, c := range []struct {
		name string
		v    any
		opt  Options
		want string
	}{
		{"tag order, names, dash and unexported fields", tagged{B: 1, A: "x", Untaged: true, Skipped: "no", Dash: "d", hidden: 3}, Options{},
			`{"b": 1, "a": "x", "Untaged": true, "-": "d"}`},
		{"sort_keys sorts a struct's keys", tagged{B: 1, A: "x"}, Options{SortKeys: true},
			`{"-": "", "Untaged": false, "a": "x", "b": 1}`},
		{"indent", nested{Inner: inner{X: 1}}, Options{Indent: 2}, "{\n  \"inner\": {\n    \"x\": 1\n  }\n}"},
		{"embedded fields in place", embeds{First: "a", inner: inner{X: 2, Y: "y"}, Last: "z"}, Options{},
			`{"first": "a", "x": 2, "y": "y", "last": "z"}`},
		{"nil embedded pointer: its fields are absent", embedsPointer{ID: "i"}, Options{}, `{"id": "i"}`},
		{"embedded pointer", embedsPointer{ID: "i", inner: &inner{X: 3}}, Options{}, `{"id": "i", "x": 3}`},
		{"the shallower field wins a name", shadow{X: "outer", inner: inner{X: 9, Y: "y"}}, Options{}, `{"x": "outer", "y": "y"}`},
		{"a tie at one depth drops the name", conflict{left{"l"}, right{"r"}, 1}, Options{}, `{"kept": 1}`},
		{"a pointer to a struct", &nested{Inner: inner{X: 4}}, Options{}, `{"inner": {"x": 4}}`},
		{"named types write their underlying values", named{Code: "no_reason", Small: -3, Big: math.MaxUint64}, Options{},
			`{"code": "no_reason", "small": -3, "big": 18446744073709551615}`},
		{"omitempty and omitzero", empties{St: inner{}, Set: "kept"}, Options{}, `{"st": {"x": 0}, "set": "kept"}`},
		{"omitempty keeps what is set", empties{P: &seven, L: []int{1}, O: NewObject(), Z: inner{X: 1}}, Options{},
			`{"p": 7, "l": [1], "o": {}, "st": {"x": 0}, "z": {"x": 1}}`},
		{"nil pointer and interface are null; nil slice and map are empty unless nullable", nils{NonN: []int{}}, Options{},
			`{"p": null, "a": null, "l": [], "m": {}, "null": null, "nonnull": [], "null_map": null}`},
		{"a map's keys are sorted", map[code]int{"b": 1, "a": 2}, Options{}, `{"a": 2, "b": 1}`},
		{"floats as Python's repr", floats{[]float64{1e16, 0.1, math.Copysign(0, -1), 5e-324, 1, 123456789012345678, 1e-5}}, Options{},
			`{"f": [1e+16, 0.1, -0.0, 5e-324, 1.0, 1.2345678901234568e+17, 1e-05]}`},
		{"non-finite floats as Python writes them", floats{[]float64{math.NaN(), math.Inf(1), math.Inf(-1)}}, Options{},
			`{"f": [NaN, Infinity, -Infinity]}`},
		{"strict writes non-finite floats as null", floats{[]float64{math.NaN(), math.Inf(1), 0.5}}, Options{Strict: true},
			`{"f": [null, null, 0.5]}`},
		{"ensure_ascii escapes, a lone surrogate kept", inner{Y: "é😀<>&\u2028\x01" + lone}, Options{},
			`{"x": 0, "y": "\u00e9\ud83d\ude00<>&\u2028\u0001\ud800"}`},
		{"unicode keeps characters", inner{Y: "é😀"}, Options{Unicode: true}, `{"x": 0, "y": "é😀"}`},
		{"decoded values inside a struct", values{O: NewObject("k", []any{inner{X: 1}}), N: "1.50", A: &inner{X: 2}, L: nil}, Options{},
			`{"o": {"k": [{"x": 1}]}, "n": 1.5, "a": {"x": 2}, "l": []}`},
		{"structs inside decoded values", []any{NewObject("s", tagged{}), map[string]any{"i": inner{}}}, Options{},
			`[{"s": {"b": 0, "a": "", "Untaged": false, "-": ""}}, {"i": {"x": 0}}]`},
		{"a Marshaler writes its value", []custom{{hit: true}, {}}, Options{}, `[{"hit": true, "rank": 1}, {"hit": null}]`},
		{"a nil pointer to a Marshaler is null", (*custom)(nil), Options{}, `null`},
		{"an array", [2]inner{{X: 1}, {X: 2}}, Options{}, `[{"x": 1}, {"x": 2}]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Marshal(c.v, c.opt)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
			assert.Equal(t, c.want, Dumps(c.v, c.opt))
		})
	}
}

// TestMarshalLaysOutFieldsAsEncodingJSON checks the key choice and order
// against encoding/json itself, on structs where the two agree on values
// (integers, ASCII strings, no nil slices).
func TestMarshalLaysOutFieldsAsEncodingJSON(t *testing.T) {
	for _, v := range []any{
		tagged{B: 1, A: "x", Untaged: true, Skipped: "no", Dash: "d"},
		embeds{First: "a", inner: inner{X: 2, Y: "y"}, Last: "z"},
		embedsPointer{ID: "i"},
		embedsPointer{ID: "i", inner: &inner{X: 3}},
		shadow{X: "outer", inner: inner{X: 9, Y: "y"}},
		conflict{left{"l"}, right{"r"}, 1},
		taggedWins{withTag{1}, 2},
		twice{K: 3},
		deep{embeds: embeds{First: "f", inner: inner{X: 1, Y: "inner"}}, Y: "outer"},
		empties{St: inner{}, Set: "kept"},
		named{Code: "c", Small: 1, Big: 2},
	} {
		std, err := json.Marshal(v)
		require.NoError(t, err)
		mine, err := Marshal(v, Options{})
		require.NoError(t, err)
		want, err := Decode(string(std))
		require.NoError(t, err)
		got, err := Decode(mine)
		require.NoError(t, err)
		assert.Equal(t, Dumps(want, Options{}), Dumps(got, Options{}), "%T", v)
	}
}

func TestMarshalRefusesWhatIsNotJSON(t *testing.T) {
	loop := &cycle{}
	loop.Next = loop
	for _, c := range []struct {
		name string
		v    any
		want string
	}{
		{"a channel", make(chan int), "cannot encode chan int"},
		{"a function", struct{ F func() }{func() {}}, "cannot encode func()"},
		{"a complex number", []complex128{1}, "cannot encode complex128"},
		{"a float32 (Python floats are doubles)", float32(0.1), "cannot encode float32"},
		{"a map with integer keys", map[int]string{1: "a"}, "object keys are strings"},
		{"the ,string option", stringOption{N: 1}, "the ,string tag option is not supported"},
		{"a cycle", loop, "nesting deeper than 1000 levels"},
		{"a Marshaler returning itself", selfish{}, "returns its own type"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Marshal(c.v, Options{})
			assert.ErrorContains(t, err, c.want)
			assert.Panics(t, func() { Dumps(c.v, Options{}) })
			assert.Panics(t, func() { ValueOf(c.v) })
		})
	}
}

func TestValueOfIsWhatMarshalWrites(t *testing.T) {
	decoded, err := Decode(`{"a": [1, {"b": "c"}]}`)
	require.NoError(t, err)
	v := values{O: decoded.(*Object), N: "2", A: embeds{First: "f", inner: inner{X: 1}}, L: []any{1.5, "s"}}
	got := ValueOf(v)
	again, err := Decode(Dumps(v, Options{}))
	require.NoError(t, err)
	d, same := Diff(got, again)
	assert.True(t, same, "%s", d)

	o := got.(*Object)
	assert.Equal(t, []string{"o", "n", "a", "l"}, o.Keys())
	shared, _ := o.Get("o")
	assert.Same(t, decoded.(*Object), shared, "a decoded part is shared, not copied")
	a, _ := o.Get("a")
	assert.Equal(t, []string{"first", "x", "last"}, a.(*Object).Keys())
	assert.Equal(t, []any{"x", "y"}, ValueOf([]code{"x", "y"}))
	assert.Nil(t, ValueOf((*inner)(nil)))
}

func TestMarshalJSONShimGivesEncodingJSONTheSameBytes(t *testing.T) {
	v := shim{Text: "é<&", F: math.NaN()}
	b, err := json.Marshal(struct {
		S shim `json:"s"`
	}{v})
	require.NoError(t, err)
	// encoding/json compacts the shim's bytes and escapes HTML characters
	assert.Equal(t, `{"s":{"text":"\u00e9\u003c\u0026","F":null}}`, string(b))
	raw, err := MarshalJSON(v)
	require.NoError(t, err)
	assert.Equal(t, `{"text": "\u00e9<&", "F": null}`, string(raw))
}

// fuzzRecord is a struct the fuzz target writes beside the *Object a
// hand-written Value method would have built for it.
type fuzzRecord struct {
	Name   code     `json:"name"`
	Score  float64  `json:"score"`
	Rank   int      `json:"rank,omitempty"`
	Hit    *bool    `json:"hit"`
	Tokens []string `json:"tokens"`
	Note   string   `json:"note,omitempty"`
	Extra  any      `json:"extra"`
	*fuzzFusion
	Ordered []fuzzRow `json:"rows"`
}

type fuzzFusion struct {
	Lexical *float64 `json:"lexical"`
	Fused   float64  `json:"fused"`
}

type fuzzRow struct {
	ID string `json:"id"`
	N  int64  `json:"n"`
}

func (r fuzzRecord) object() *Object {
	o := NewObject("name", string(r.Name), "score", r.Score)
	if r.Rank != 0 {
		o.Set("rank", r.Rank)
	}
	var hit any
	if r.Hit != nil {
		hit = *r.Hit
	}
	tokens := make([]any, len(r.Tokens))
	for i, s := range r.Tokens {
		tokens[i] = s
	}
	o.Set("hit", hit).Set("tokens", tokens)
	if r.Note != "" {
		o.Set("note", r.Note)
	}
	o.Set("extra", r.Extra)
	if f := r.fuzzFusion; f != nil {
		var lexical any
		if f.Lexical != nil {
			lexical = *f.Lexical
		}
		o.Set("lexical", lexical).Set("fused", f.Fused)
	}
	rows := make([]any, len(r.Ordered))
	for i, row := range r.Ordered {
		rows[i] = NewObject("id", row.ID, "n", row.N)
	}
	return o.Set("rows", rows)
}

// FuzzMarshalStruct checks the struct encoder against Dumps of the
// equivalent *Object (itself checked against CPython by the golden file)
// under every option, and that ValueOf is what Marshal writes.
func FuzzMarshalStruct(f *testing.F) {
	f.Add("read", "\xed\xa0\x80 é", 0.1, 3, int64(-1), true, true, uint8(3), `{"k": [1, 2.5]}`)
	f.Add("", "", math.Copysign(0, -1), 0, int64(1)<<62, false, false, uint8(0), `null`)
	f.Add("x\x00\"\\", "\xff", 1e16, -7, int64(0), true, false, uint8(200), `"NaN"`)
	f.Fuzz(func(t *testing.T, name, text string, score float64, rank int, n int64, hit, fused bool, tokens uint8, extra string) {
		r := fuzzRecord{Name: code(name), Score: score, Rank: rank, Note: text, Tokens: nil}
		if hit {
			r.Hit = &fused
		}
		for i := 0; i < int(tokens%5); i++ {
			r.Tokens = append(r.Tokens, text[:len(text)*i/5])
		}
		if fused {
			r.fuzzFusion = &fuzzFusion{Fused: score / 3}
			if rank%2 == 0 {
				r.Lexical = &score
			}
		}
		for i := 0; i < int(tokens%3); i++ {
			r.Ordered = append(r.Ordered, fuzzRow{ID: name, N: n + int64(i)})
		}
		if v, err := Decode(extra); err == nil {
			r.Extra = v
		}
		for _, opt := range []Options{{}, {SortKeys: true}, {Indent: 2}, {Unicode: true}, {Strict: true}} {
			got, err := Marshal(r, opt)
			require.NoError(t, err)
			require.Equal(t, Dumps(r.object(), opt), got, "%+v", opt)
			require.Equal(t, got, Dumps(ValueOf(r), opt), "ValueOf, %+v", opt)
		}
	})
}
