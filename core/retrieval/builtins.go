package retrieval

import (
	"github.com/ragagentlab/ragagent/core/reason"
)

// Seed is the seed's configuration's name: every pack's default when its
// manifest names none.
const Seed = "seed"

// General is the built-in a pack of documents nobody measured gets as its
// default (`corpus build`, the page's documents, the shipped packs):
// chosen by leave-one-site-out over seven documentation sites' natural
// question sets, the one whose worst site's paired MRR@10 difference
// against seed was largest (docs/retrieval.md). proximity, the default
// before, was chosen on 17 to 20 development questions of one pack and
// lost to seed on sites nobody tuned it on.
const General = "general"

// Builtins are the offline, deterministic built-in configurations, in
// `--list` order, seed first (a fresh slice each call). What each does and
// what it measured is in docs/retrieval.md.
func Builtins() []Spec {
	stemmed := Spec{Name: "stemmed", Tokenizer: TokenizerStemmed, StopWords: StopEnglish,
		Fields: Fields{Text: 1}, SecondStage: SecondStage{Method: StageNone},
		Description: "Snowball English stems on both sides, English stop words dropped from the query; bm25 over the text"}
	fields := stemmed
	fields.Name = "fields"
	fields.Fields = Fields{Text: 1, Title: 0.5, Anchor: 1}
	fields.Description = "stemmed, plus the passage's title and its documented object name or URL anchor as weighted bm25 fields"
	proximity := fields
	proximity.Name = "proximity"
	proximity.Proximity = &Proximity{Window: 4, Weight: 1, Depth: DefaultDepth}
	proximity.Description = "fields, plus a boost for query terms near each other in the text within 4 tokens (BM25TP over the top 50)"
	general := stemmed
	general.Name = General
	general.StopWords = StopQuestions
	general.Fields = Fields{Text: 1, Title: 0.5}
	general.Proximity = &Proximity{Window: 4, Weight: 1, Depth: DefaultDepth}
	general.Description = "stemmed, question stop words, the title path (page title and headings) weighed 0.5, and the proximity boost: the default, chosen across seven documentation sites"
	rm3 := fields
	rm3.Name = "rm3"
	rm3.Expansion = &Expansion{Method: ExpansionRM3, Docs: 10, Terms: 10, Weight: 0.5}
	rm3.Description = "fields, plus RM3 pseudo-relevance feedback: 10 terms from the top 10 passages, weighed 0.5"
	return []Spec{
		{Name: Seed, Tokenizer: TokenizerSeed, StopWords: StopNone, Fields: Fields{Text: 1}, SecondStage: SecondStage{Method: StageNone},
			Description: "the seed's search: a literal OR of the query's distinct [a-z0-9]+ tokens, bm25 over the text"},
		stemmed, fields, proximity, rm3, general,
	}
}

// Lookup is the built-in configuration called name (reason.UnknownConfig
// when there is none).
func Lookup(name string) (Spec, error) {
	var names []string
	for _, s := range Builtins() {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Spec{}, reason.New(reason.UnknownConfig, "no built-in retrieval configuration is called %q (the built-ins are %v; a file's path names a configuration of your own)", name, names)
}
