package policy

import (
	_ "embed"
	"regexp"
	"strings"

	"github.com/ragagentlab/ragagent/core/store"
)

// commonWords is common-words.txt: the commonest English words (SCOWL
// levels 10 and 20, see common-words.NOTICE), lower-case, sorted bytewise,
// one a line. It is what a model knows of the language: which words are
// ordinary English and which are names.
//
//go:embed common-words.txt
var commonWords string

// ordinary reports whether w is one of the common English words: a binary
// search over the sorted lines, so nothing is built or kept.
func ordinary(w string) bool {
	s := commonWords
	lo, hi := 0, len(s)
	for lo < hi {
		mid := lo + (hi-lo)/2
		start := strings.LastIndexByte(s[lo:mid], '\n') + 1 + lo
		end := strings.IndexByte(s[mid:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += mid
		}
		switch line := s[start:end]; {
		case w == line:
			return true
		case w < line:
			hi = start
		default:
			lo = end + 1
		}
	}
	return false
}

// isFunctionWord reports whether w is a question word that carries no
// topic (in, does, how, ...): searching or covering it says nothing about
// the evidence.
func isFunctionWord(w string) bool {
	switch w {
	case "a", "about", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by",
		"can", "could", "did", "do", "does", "doing", "for", "from", "had", "has", "have", "how", "i", "if", "in",
		"into", "is", "it", "its", "me", "my", "no", "not", "of", "on", "or", "our", "should", "so", "some",
		"than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "to", "was",
		"we", "were", "what", "when", "where", "which", "while", "who", "whom", "whose", "why", "will", "with",
		"would", "you", "your":
		return true
	}
	return false
}

// terms are a question's terms as the policy weighs them.
type terms struct {
	// content are the question's terms in first-seen order, without
	// function words, single letters, the subject's names and the
	// version's numbers.
	content []string
	// names are the distinctive content terms: those the question
	// writes as names (see nameTerms). An answer needs one read passage
	// that carries all of them.
	names []string
	// literals are dotted numbers the question names other than its
	// version ("4.0", "3.8"): the evidence must carry them verbatim.
	literals []string
}

// dotted finds a dotted number such as 4.0 or 3.11.2.
var dotted = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)+`)

// analyse splits a question into content terms, names and literals. The
// subject (what the corpus is about, from the system text) contributes
// its own names, which are not content: every passage is about them
// whether or not it repeats them, as Python's documentation seldom says
// "Python".
func analyse(question, version, subject string) terms {
	skip := map[string]bool{}
	for _, t := range store.Terms(version) {
		skip[t] = true
	}
	for t := range nameTerms(subject, false) {
		skip[t] = true
	}
	names := nameTerms(question, true)
	joined := joinedLetters(question)
	all := store.Terms(question)
	var q terms
	for _, t := range all {
		if skip[t] || isFunctionWord(t) || (len(t) == 1 && !isDigits(t) && !joined[t]) {
			continue
		}
		q.content = append(q.content, t)
		if names[t] {
			q.names = append(q.names, t)
		}
	}
	if len(q.content) == 0 {
		q.content, q.names = all, nil
	}
	seen := map[string]bool{}
	for _, lit := range dotted.FindAllString(question, -1) {
		if lit == version || strings.HasPrefix(lit, version+".") || strings.HasPrefix(version, lit+".") || seen[lit] {
			continue
		}
		seen[lit] = true
		q.literals = append(q.literals, lit)
	}
	return q
}

// joinedLetters are the single letters text joins to a word by a hyphen
// (f-string, x-axis, e-mail, A-record), lower-cased: part of the name they
// are written in, so kept as content where a letter on its own (the =
// specifier, "a" or "I") is not. A search of "string" alone misses what
// distinguishes an f-string from a string.
func joinedLetters(text string) map[string]bool {
	out := map[string]bool{}
	for _, chunk := range strings.Fields(text) {
		parts := strings.Split(chunk, "-")
		for i, p := range parts {
			runs := asciiRuns(p)
			// The letter ends this part (f- of f-string) or begins it
			// (-x of axis-x), and the word on the other side of the
			// hyphen is two letters or more.
			if i+1 < len(parts) && len(runs) > 0 && single(runs[len(runs)-1]) && strings.HasSuffix(p, runs[len(runs)-1]) &&
				word(asciiRuns(parts[i+1]), true) && isLetter(parts[i+1][0]) {
				out[strings.ToLower(runs[len(runs)-1])] = true
			}
			if i > 0 && len(runs) > 0 && single(runs[0]) && strings.HasPrefix(p, runs[0]) &&
				word(asciiRuns(parts[i-1]), false) && isLetter(parts[i-1][len(parts[i-1])-1]) {
				out[strings.ToLower(runs[0])] = true
			}
		}
	}
	return out
}

// single reports whether an ASCII run is one letter.
func single(run string) bool { return len(run) == 1 && isLetter(run[0]) }

// word reports whether the first (or last) of runs is a word of two
// letters or more.
func word(runs []string, first bool) bool {
	if len(runs) == 0 {
		return false
	}
	r := runs[len(runs)-1]
	if first {
		r = runs[0]
	}
	return len(r) >= 2 && isLetter(r[0])
}

// nameTerms are the terms text writes as names rather than as ordinary
// English: a word that is not a common English word (django, numpy,
// dataframe, coroutines); a word with a capital after its first letter
// (PostgreSQL, NumPy, TCP, JSON) unless it is an ordinary word in
// capitals for emphasis (ONLY); a capitalised word that does not begin a
// sentence (Windows, Excel, Counter), unless the text capitalises most of
// its words (a title); a word that mixes letters and digits (utf8,
// sha256); and every word of a code identifier (Path.write_text, os.path,
// print()). In a question (sentences true) a sentence's first word is not
// a name for its capital alone; in a subject (a title) it is.
func nameTerms(text string, sentences bool) map[string]bool {
	type word struct {
		raw                      string
		initial, inIdent, prefix bool
	}
	var words []word
	initial := true
	for _, chunk := range strings.Fields(text) {
		core := strings.TrimRight(strings.TrimLeft(chunk, "\"'`“‘([{<"), "\"'`”’,;:!?.]}>")
		if strings.HasSuffix(core, ")") && !strings.HasSuffix(core, "()") {
			core = strings.TrimRight(core, ")")
		}
		ident := identifier(core)
		runs := asciiRuns(core)
		for i, raw := range runs {
			// The short first part of a hyphenated word is a prefix
			// (non-ASCII, re-run), not a word of its own.
			prefix := i+1 < len(runs) && len(raw) <= 3 && strings.HasPrefix(core[strings.Index(core, raw)+len(raw):], "-")
			words = append(words, word{raw: raw, initial: initial && sentences, inIdent: ident, prefix: prefix})
			initial = false
		}
		if chunk != "" && strings.ContainsAny(chunk[len(chunk)-1:], ".?!:") {
			initial = true
		}
	}
	capitals, others := 0, 0
	for _, w := range words {
		t := strings.ToLower(w.raw)
		if w.initial || isDigits(t) || isFunctionWord(t) {
			continue
		}
		if isUpper(w.raw[0]) {
			capitals++
		} else {
			others++
		}
	}
	titled := sentences && capitals >= 2 && capitals > others
	out := map[string]bool{}
	for _, w := range words {
		t := strings.ToLower(w.raw)
		if len(t) < 2 || isDigits(t) || isFunctionWord(t) {
			continue
		}
		inner := strings.IndexFunc(w.raw[1:], func(r rune) bool { return r >= 'A' && r <= 'Z' }) >= 0
		allCaps := strings.ToUpper(w.raw) == w.raw
		switch {
		case w.inIdent, hasDigit(t), !ordinary(t) && !w.prefix:
			out[t] = true
		case inner && !(allCaps && ordinary(t)):
			out[t] = true
		case isUpper(w.raw[0]) && !allCaps && !w.initial && !titled:
			out[t] = true
		}
	}
	return out
}

// identifier reports whether a word is code: letters joined by '_' or by
// '.' before a letter (write_text, json.dumps, os.path), or a call (f()).
func identifier(w string) bool {
	if strings.HasSuffix(w, "()") {
		return true
	}
	for i := 1; i+1 < len(w); i++ {
		if (w[i] == '_' || w[i] == '.') && isAlnum(w[i-1]) && isLetter(w[i+1]) {
			return true
		}
	}
	return false
}

// asciiRuns are the runs of ASCII letters and digits in w, as written.
func asciiRuns(w string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(w); i++ {
		if i < len(w) && isAlnum(w[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, w[start:i])
			start = -1
		}
	}
	return out
}

func isUpper(c byte) bool  { return c >= 'A' && c <= 'Z' }
func isLetter(c byte) bool { return isUpper(c) || (c >= 'a' && c <= 'z') }
func isAlnum(c byte) bool  { return isLetter(c) || (c >= '0' && c <= '9') }

func isDigits(t string) bool {
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return false
		}
	}
	return t != ""
}

func hasDigit(t string) bool { return strings.IndexAny(t, "0123456789") >= 0 }

// carriesLiteral reports whether text holds lit as a number of its own:
// not inside a longer number (4.0 is not in 14.0, 4.01 or 4.0.1).
func carriesLiteral(text, lit string) bool {
	for from := 0; ; {
		i := strings.Index(text[from:], lit)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(lit)
		before := i > 0 && (isDigitByte(text[i-1]) || text[i-1] == '.')
		after := end < len(text) && (isDigitByte(text[end]) || (text[end] == '.' && end+1 < len(text) && isDigitByte(text[end+1])))
		if !before && !after {
			return true
		}
		from = i + 1
	}
}

func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }

// forms are t's other number: the singular of a plural, the plural of a
// singular (key/keys, dictionary/dictionaries, class/classes), for a common
// English word whose other form is one too. A literal index matches words
// as written, so a question about "keys" misses a passage about a "key";
// a reader who knows the language searches both.
func forms(t string) []string {
	if !ordinary(t) || len(t) < 3 {
		return nil
	}
	var cands []string
	switch {
	case strings.HasSuffix(t, "ies"):
		cands = []string{t[:len(t)-3] + "y"}
	case strings.HasSuffix(t, "sses"), strings.HasSuffix(t, "xes"), strings.HasSuffix(t, "ches"), strings.HasSuffix(t, "shes"):
		cands = []string{t[:len(t)-2]}
	case strings.HasSuffix(t, "ss"), strings.HasSuffix(t, "us"), strings.HasSuffix(t, "is"):
		cands = []string{t + "es"}
	case strings.HasSuffix(t, "s"):
		cands = []string{t[:len(t)-1]}
	case strings.HasSuffix(t, "y") && !strings.ContainsAny(t[len(t)-2:len(t)-1], "aeiou"):
		cands = []string{t[:len(t)-1] + "ies"}
	case strings.HasSuffix(t, "x"), strings.HasSuffix(t, "ch"), strings.HasSuffix(t, "sh"):
		cands = []string{t + "es"}
	default:
		cands = []string{t + "s"}
	}
	var out []string
	for _, c := range cands {
		if c != t && ordinary(c) {
			out = append(out, c)
		}
	}
	return out
}

// withForms is q's content terms followed by the other forms (forms) of
// each that is not a name (a name is written as it is: Path, json.dumps),
// when the search matches none of the terms so far in the same key (key:
// under a stemming search, strings is string and adds nothing).
func withForms(q terms, key func(string) string) []string {
	out := append([]string{}, q.content...)
	keys := map[string]bool{}
	for _, t := range out {
		keys[key(t)] = true
	}
	for _, t := range q.content {
		if q.isName(t) {
			continue
		}
		for _, f := range forms(t) {
			if k := key(f); !keys[k] {
				keys[k] = true
				out = append(out, f)
			}
		}
	}
	return out
}
