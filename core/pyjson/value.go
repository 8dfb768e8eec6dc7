package pyjson

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Object is a JSON object that keeps its keys in first-insertion order, as a
// Python dict does; setting an existing key keeps its position.
type Object struct {
	keys   []string
	values map[string]any
}

// NewObject returns an object with the given key, value pairs in order.
func NewObject(pairs ...any) *Object {
	o := &Object{values: make(map[string]any, len(pairs)/2)}
	for i := 0; i+1 < len(pairs); i += 2 {
		o.Set(pairs[i].(string), pairs[i+1])
	}
	return o
}

// Set stores value under key.
func (o *Object) Set(key string, value any) *Object {
	if o.values == nil {
		o.values = map[string]any{}
	}
	if _, ok := o.values[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.values[key] = value
	return o
}

// Get returns the value under key and whether it is present.
func (o *Object) Get(key string) (any, bool) {
	if o == nil {
		return nil, false
	}
	v, ok := o.values[key]
	return v, ok
}

// Keys returns the keys in insertion order.
func (o *Object) Keys() []string {
	if o == nil {
		return nil
	}
	return append([]string(nil), o.keys...)
}

// Len is the number of keys.
func (o *Object) Len() int {
	if o == nil {
		return 0
	}
	return len(o.keys)
}

// Number is a JSON number kept as its literal text, so that integers of any
// size compare exactly (Python ints are unbounded) and NaN and the
// infinities (which Python's json accepts) can be represented.
type Number string

// IsInt reports whether Python would decode the literal as an int.
func (n Number) IsInt() bool {
	s := string(n)
	if s == "" || s == "NaN" || strings.HasSuffix(s, "Infinity") {
		return false
	}
	return !strings.ContainsAny(s, ".eE")
}

// Int returns the integer value and whether the number is an integer that
// fits in an int.
func (n Number) Int() (int, bool) {
	if !n.IsInt() {
		return 0, false
	}
	v, err := strconv.Atoi(string(n))
	return v, err == nil
}

// IntOf reads a whole number from any member of the value set: a parsed
// Number (Int's rules) or an int, as ValueOf makes from Go values. A float64
// or anything else is not one, as a float is not an int in Python. Code
// reading values that may come from either source (a recording read from
// its bytes, or kept in memory since it was made) reads through IntOf.
func IntOf(v any) (int, bool) {
	switch x := v.(type) {
	case Number:
		return x.Int()
	case int:
		return x, true
	}
	return 0, false
}

// Float64 returns the value as Python's float() would.
func (n Number) Float64() float64 {
	switch n {
	case "NaN":
		return math.NaN()
	case "Infinity":
		return math.Inf(1)
	case "-Infinity":
		return math.Inf(-1)
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		// ParseFloat reports out of range values as ±Inf or 0 with an error;
		// Python's float() gives the same values without one.
		return f
	}
	return f
}

// rat returns the exact value of an int literal.
func (n Number) bigInt() *big.Int {
	v, _ := new(big.Int).SetString(string(n), 10)
	return v
}
