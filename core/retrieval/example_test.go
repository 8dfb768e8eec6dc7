package retrieval_test

import (
	"fmt"

	"github.com/ragagentlab/ragagent/core/retrieval"
	"github.com/ragagentlab/ragagent/core/store"
)

// Example: a configuration is data; a Searcher has store.Index's Search.
// Stemming finds "Connections" for "connecting", which the seed's literal
// search cannot.
func Example() {
	ix, err := store.Open([]store.Doc{
		{Version: "3.11", Text: "Connections are made by connect.", Title: "sqlite3", URL: "https://docs.example/sqlite3.html#sqlite3.Connection"},
		{Version: "3.11", Text: "Write text to a file.", Title: "pathlib", URL: "https://docs.example/pathlib.html#pathlib.Path.write_text"},
	})
	if err != nil {
		panic(err)
	}
	defer ix.Close()
	spec, err := retrieval.Parse([]byte(`{"name": "mine", "tokenizer": "stemmed", "stop_words": "english", "fields": {"text": 1, "anchor": 1}}`))
	if err != nil {
		panic(err)
	}
	for _, s := range []retrieval.Spec{retrieval.Builtins()[0], spec} {
		searcher, err := retrieval.Open(ix, s)
		if err != nil {
			panic(err)
		}
		hits, err := searcher.Search("connecting to a database", 2, "3.11")
		if err != nil {
			panic(err)
		}
		for _, h := range hits {
			fmt.Println(s.Name, h.Rank, h.Doc)
		}
	}
	// The seed matches only "to" and "a", in the other passage; stemmed,
	// with stop words dropped, "connect" finds the first.
	// Output:
	// seed 1 1
	// mine 1 0
}
