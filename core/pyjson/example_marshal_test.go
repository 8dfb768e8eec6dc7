package pyjson_test

import (
	"encoding/json"
	"fmt"

	"github.com/ragagentlab/ragagent/core/pyjson"
)

// Marshal writes a struct as Python's json.dumps would write the dict its
// tags describe, where encoding/json differs: ", " and ": " separators,
// Python's float digits, every non-ASCII character escaped (a lone
// surrogate from model text kept), nothing HTML-escaped, and a nil slice
// written as an empty list.
func ExampleMarshal() {
	type row struct {
		SourceID string   `json:"source_id"`
		Score    float64  `json:"score"`
		Quote    string   `json:"quote"`
		Terms    []string `json:"terms"`
		Note     string   `json:"note,omitempty"`
	}
	lone, _ := pyjson.Decode(`"\ud800"`)
	r := row{SourceID: "pathlib", Score: 1, Quote: "é <b> " + lone.(string)}

	text, err := pyjson.Marshal(r, pyjson.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println(text)
	std, _ := json.Marshal(r)
	fmt.Println(string(std))
	sorted, _ := pyjson.Marshal(r, pyjson.Options{SortKeys: true})
	fmt.Println(sorted)
	// Output:
	// {"source_id": "pathlib", "score": 1.0, "quote": "\u00e9 <b> \ud800", "terms": []}
	// {"source_id":"pathlib","score":1,"quote":"é \u003cb\u003e \ufffd\ufffd\ufffd","terms":null}
	// {"quote": "\u00e9 <b> \ud800", "score": 1.0, "source_id": "pathlib", "terms": []}
}

// ValueOf gives the value Marshal writes as decoded-style values, for
// comparing a Go result with a published record.
func ExampleValueOf() {
	type usage struct {
		ModelCalls int `json:"model_calls"`
		Searches   int `json:"searches"`
	}
	published, _ := pyjson.Decode(`{"searches": 1, "model_calls": 3}`)
	mine := pyjson.ValueOf(usage{ModelCalls: 3, Searches: 1})
	fmt.Println(mine.(*pyjson.Object).Keys(), pyjson.Equal(mine, published))
	// Output: [model_calls searches] true
}
