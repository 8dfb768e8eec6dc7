package retrieval

import "github.com/kljensen/snowball/english"

// stemWord is the Snowball English (Porter2) stem of a lower-case token
// (github.com/kljensen/snowball, the published algorithm; its tests hold
// the published vocabulary). Stop words are stemmed like any word, so the
// query and the passages agree whatever the stop word setting.
func stemWord(t string) string { return english.Stem(t, true) }

// isStopWord reports whether a lower-case token is an English stop word:
// the Snowball project's English list less its contractions (the seed's
// tokens never hold an apostrophe), a question typed as people ask
// carrying "how do i ... what is ...".
func isStopWord(t string) bool {
	switch t {
	case "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at",
		"be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did",
		"do", "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have",
		"having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into",
		"is", "it", "its", "itself", "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of",
		"off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "s", "same",
		"she", "should", "so", "some", "such", "t", "than", "that", "the", "their", "theirs", "them", "themselves",
		"then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very",
		"was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with",
		"would", "you", "your", "yours", "yourself", "yourselves":
		return true
	}
	return false
}
