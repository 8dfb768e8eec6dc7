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

// stopList is the test for a stop word list's words (nil for StopNone).
func stopList(name string) func(string) bool {
	switch name {
	case StopEnglish:
		return isStopWord
	case StopQuestions:
		return isQuestionWord
	}
	return nil
}

// isQuestionWord reports whether a lower-case token is one a question is
// phrased in rather than about (StopQuestions): articles, pronouns,
// auxiliaries and modals, question words, conjunctions, the common
// prepositions, the tails of contractions (what's, don't, I'm, I'd, I've,
// I'll, you're), and conversational filler. Words of relation and
// quantity (between, before, after, only, same, more, each, all, not, up,
// out, over, under) are not among them: "days between two dates" and
// "is not" turn on them.
func isQuestionWord(t string) bool {
	switch t {
	case "a", "an", "the", "i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "you", "your", "yours",
		"yourself", "he", "him", "his", "she", "her", "it", "its", "itself", "they", "them", "their", "theirs",
		"this", "that", "these", "those", "there", "here", "somebody", "someone", "something", "anyone", "anything",
		"am", "is", "are", "was", "were", "be", "been", "being", "do", "does", "did", "doing", "done", "have", "has",
		"had", "having", "can", "could", "should", "would", "will", "shall", "may", "might", "must",
		"what", "how", "why", "when", "where", "which", "who", "whom", "whose", "whats", "hows",
		"and", "or", "but", "so", "if", "then", "than", "also", "too", "very",
		"of", "to", "in", "on", "at", "by", "for", "with", "from", "into", "about", "as",
		"s", "t", "m", "d", "ll", "ve", "re",
		"way", "ways", "want", "wants", "wanted", "need", "needs", "needed", "try", "trying", "tried", "possible",
		"possibly", "actually", "really", "just", "thing", "things", "please", "best", "proper", "properly",
		"correct", "correctly", "right", "simple", "simply", "easy", "easiest", "easily", "quick", "quickly",
		"able", "exactly", "certain", "own", "some", "any", "kind":
		return true
	}
	return false
}
