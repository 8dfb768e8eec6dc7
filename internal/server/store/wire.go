package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
)

// The D1 wire form: how a batch of statements goes from the Worker's Go
// program to worker.mjs's d1 helper, and its rows come back, as one byte
// buffer each way (worker/d1wire.mjs is the JS half). Value by value
// through syscall/js, a batch cost a JS object per array, a crossing per
// value read and a finalizer per js.Value made: 117 to 136 µs for a
// FinishHeld-like batch against 55 to 81 µs in this form (docs/worker.md,
// "The D1 wire form"). In the buffer, every
// count and length is a little-endian uint32 and strings are UTF-8:
//
//	batch   = count(statements) { string(sql) count(args) { value } }
//	results = count(results) { count(rows) { count(columns) { value } } }
//	value   = 0x00 (null) | 0x01 float64 (little-endian) | 0x02 string
//	string  = length(bytes) bytes
//
// Numbers cross as float64, as a JS number holds them (D1 binds and
// returns JS numbers); the store's arguments are text, small integers and
// nulls.
const (
	wireNull   = 0
	wireNumber = 1
	wireString = 2
)

// AppendBatch appends stmts in the wire form. An argument of another type
// than nil, string, int, int64 or float64 is an error (D1 binds no other
// from Go), as is an integer a float64 does not hold exactly.
func AppendBatch(dst []byte, stmts []Statement) ([]byte, error) {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(stmts)))
	for i, st := range stmts {
		dst = appendWireString(dst, st.SQL)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(st.Args)))
		for j, a := range st.Args {
			var err error
			if dst, err = appendWireValue(dst, a); err != nil {
				return nil, fmt.Errorf("store: statement %d, argument %d: %w", i+1, j+1, err)
			}
		}
	}
	return dst, nil
}

// maxExact is the largest integer every smaller one of which a float64
// holds exactly (2^53).
const maxExact = 1 << 53

func appendWireValue(dst []byte, v any) ([]byte, error) {
	if x, ok := v.(int); ok {
		v = int64(x)
	}
	var f float64
	switch x := v.(type) {
	case nil:
		return append(dst, wireNull), nil
	case string:
		return appendWireString(append(dst, wireString), x), nil
	case int64:
		if x > maxExact || x < -maxExact {
			return nil, fmt.Errorf("the integer %d is past what a JS number holds exactly", x)
		}
		f = float64(x)
	case float64:
		f = x
	default:
		return nil, fmt.Errorf("a %T is not a D1 value", v)
	}
	return binary.LittleEndian.AppendUint64(append(dst, wireNumber), math.Float64bits(f)), nil
}

func appendWireString(dst []byte, s string) []byte {
	return append(binary.LittleEndian.AppendUint32(dst, uint32(len(s))), s...)
}

// errWire is what a buffer that is not the wire form gets.
var errWire = errors.New("store: the D1 results are not in the wire form")

// wire reads the wire form.
type wire struct {
	b   []byte
	err error
}

func (w *wire) fail(format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf("%w: "+format, append([]any{errWire}, args...)...)
	}
}

func (w *wire) uint32() int {
	if w.err != nil {
		return 0
	}
	if len(w.b) < 4 {
		w.fail("cut short")
		return 0
	}
	n := binary.LittleEndian.Uint32(w.b)
	w.b = w.b[4:]
	return int(n)
}

// count reads a count of items each at least min bytes long: one the
// rest of the buffer cannot hold is an error, so no count makes a slice
// larger than its input.
func (w *wire) count(min int) int {
	n := w.uint32()
	if n > len(w.b)/min {
		w.fail("a count of %d past the buffer's end", n)
		return 0
	}
	return n
}

func (w *wire) value() any {
	if w.err != nil {
		return nil
	}
	if len(w.b) < 1 {
		w.fail("cut short")
		return nil
	}
	tag := w.b[0]
	w.b = w.b[1:]
	switch tag {
	case wireNull:
		return nil
	case wireNumber:
		if len(w.b) < 8 {
			w.fail("cut short")
			return nil
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(w.b))
		w.b = w.b[8:]
		return f
	case wireString:
		n := w.count(1)
		if w.err != nil {
			return nil
		}
		s := string(w.b[:n])
		w.b = w.b[n:]
		if !utf8.ValidString(s) {
			w.fail("a string that is not UTF-8")
			return nil
		}
		return s
	}
	w.fail("a value tagged %d", tag)
	return nil
}

// DecodeResults reads a batch's results in the wire form: each statement's
// rows, each row its columns' values (nil, float64 or string), as the
// Batcher returns them. Anything else (cut short, a byte left over, an
// unknown tag, a count past the end, text that is not UTF-8) is an error.
func DecodeResults(b []byte) ([]Rows, error) {
	w := &wire{b: b}
	out := make([]Rows, w.count(4))
	for i := range out {
		rows := make(Rows, w.count(4))
		for j := range rows {
			row := make([]any, w.count(1))
			for k := range row {
				row[k] = w.value()
			}
			rows[j] = row
		}
		out[i] = rows
	}
	if w.err != nil {
		return nil, w.err
	}
	if len(w.b) > 0 {
		return nil, fmt.Errorf("%w: %d bytes after the results", errWire, len(w.b))
	}
	return out, nil
}
