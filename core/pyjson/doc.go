// Package pyjson reads, writes and compares JSON exactly as CPython's json
// module does, because request bodies and recordings are shared with the
// reference Python lab: a state text must be byte-identical to
// json.dumps(state, sort_keys=True), a model reply must decode (or fail) as
// json.loads would, and a replayed request must compare equal as two Python
// values would.
//
// Decoded values are plain Go values: nil, bool, string, Number, []any and
// *Object (an insertion-ordered object). Marshal and Dumps also write Go
// structs (in the order their json tags state, as encoding/json would lay
// them out), pointers, slices, maps and named types, so that every output
// shape is stated once, by its struct, and written with Python's escaping
// and float formatting; ValueOf turns such a value into a decoded-style
// value for comparison.
//
// Strings are UTF-8, except that a lone UTF-16 surrogate (which Python keeps
// in a str, for example from "\ud800") is held as its three-byte generalized
// UTF-8 form (WTF-8), so that it survives a decode and encode round trip and
// counts as one character.
package pyjson
