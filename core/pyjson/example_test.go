package pyjson_test

import (
	"encoding/json"
	"fmt"
	"log"

	"github.com/ragagentlab/ragagent/core/pyjson"
)

// ExampleDumps writes what Python's json.dumps writes: ", " and ": "
// separators, keys in insertion order (an Object) or sorted (sort_keys=True),
// and floats as Python's repr spells them. encoding/json, for comparison,
// writes no spaces and spells 1e16 and 1.0 as integers.
func ExampleDumps() {
	v := pyjson.NewObject("zeta", 1.0, "alpha", []any{1e16, 0.1, 3})
	fmt.Println(pyjson.Dumps(v, pyjson.Options{}))
	fmt.Println(pyjson.Dumps(v, pyjson.Options{SortKeys: true}))

	std, _ := json.Marshal(map[string]any{"zeta": 1.0, "alpha": []any{1e16, 0.1, 3}})
	fmt.Println(string(std))
	// Output:
	// {"zeta": 1.0, "alpha": [1e+16, 0.1, 3]}
	// {"alpha": [1e+16, 0.1, 3], "zeta": 1.0}
	// {"alpha":[10000000000000000,0.1,3],"zeta":1}
}

// ExampleDumps_escaping shows Python's string escaping. By default
// (ensure_ascii=True) every non-ASCII character is a \uXXXX escape, one
// outside the Basic Multilingual Plane a UTF-16 surrogate pair; Options.Unicode
// (ensure_ascii=False) writes them as they are. Neither escapes <, > and &,
// and ensure_ascii=False writes U+2028 LINE SEPARATOR raw; encoding/json
// escapes all four.
func ExampleDumps_escaping() {
	s := "café 😀 <b>&</b>"
	fmt.Println(pyjson.Dumps(s, pyjson.Options{}))
	fmt.Println(pyjson.Dumps(s, pyjson.Options{Unicode: true}))
	std, _ := json.Marshal(s)
	fmt.Println(string(std))

	line := "a\u2028b"
	fmt.Println(pyjson.Dumps(line, pyjson.Options{Unicode: true}) == `"`+line+`"`)
	std, _ = json.Marshal(line)
	fmt.Println(string(std))
	// Output:
	// "caf\u00e9 \ud83d\ude00 <b>&</b>"
	// "café 😀 <b>&</b>"
	// "café 😀 \u003cb\u003e\u0026\u003c/b\u003e"
	// true
	// "a\u2028b"
}

// ExampleDecode shows json.loads where encoding/json differs: a repeated
// key keeps its first position and its last value (as a Python dict
// does), numbers keep their literal text (Number), and NaN and the
// infinities are accepted.
func ExampleDecode() {
	v, err := pyjson.Decode(`{"action": "search", "query": "json", "action": "stop"}`)
	if err != nil {
		log.Fatal(err)
	}
	obj := v.(*pyjson.Object)
	fmt.Println(obj.Keys())
	fmt.Println(pyjson.Dumps(obj, pyjson.Options{}))

	v, err = pyjson.Decode(`[NaN, -Infinity, 1E16, 0.10, 12345678901234567890]`)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", v)
	fmt.Println(pyjson.Dumps(v, pyjson.Options{}))

	var std any
	fmt.Println(json.Unmarshal([]byte(`[NaN]`), &std))
	// Output:
	// [action query]
	// {"action": "stop", "query": "json"}
	// ["NaN" "-Infinity" "1E16" "0.10" "12345678901234567890"]
	// [NaN, -Infinity, 1e+16, 0.1, 12345678901234567890]
	// invalid character 'N' looking for beginning of value
}
