// Package retrieval is what decides a ranking, as data: a configuration
// (Spec) names a tokenizer, stop words, fields and their weights, a search
// depth, a proximity boost, query expansion, fusion with a vector branch
// and a second stage, and a Searcher ranks a pack's passages under it. The
// configuration "seed" is the seed's search exactly (store.Search: a
// literal OR of the query's distinct [a-z0-9]+ tokens ranked by bm25), so
// the seed pack and every recording made under it stay byte-identical; the
// other built-ins score in Go from the statistics FTS5 keeps (see Base).
// Configurations are compared on question sets by `ragagent retrieval`;
// docs/retrieval.md says what each built-in does and what it measured.
package retrieval

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"regexp"

	"github.com/ragagentlab/ragagent/core/jsonfile"
	"github.com/ragagentlab/ragagent/core/reason"
)

// Tokenizers.
const (
	// TokenizerSeed is the seed's: the [a-z0-9]+ runs of the lower-cased
	// query (store.Terms), matched literally.
	TokenizerSeed = "seed"
	// TokenizerStemmed is the seed's tokens reduced by the Snowball English
	// (Porter2) stemmer, on both sides: "connections" finds "connected".
	TokenizerStemmed = "stemmed"
)

// Stop word lists.
const (
	StopNone    = "none"
	StopEnglish = "english"
	// StopQuestions are the words a question is phrased in rather than
	// about: articles, pronouns, auxiliaries, question words, the common
	// prepositions, and conversational filler ("way", "want", "actually");
	// unlike StopEnglish it keeps the words of relation and quantity a
	// programming question turns on (between, before, after, only, same,
	// more, up, out, off, over, under, each, all, not).
	StopQuestions = "questions"
)

// Methods of the optional stages.
const (
	ExpansionRM3 = "rm3"
	FusionRRF    = "rrf"

	StageNone         = "none"
	StageCoverage     = "coverage"
	StageCrossEncoder = "cross-encoder"
	StageListwise     = "listwise"
)

// Spec is one retrieval configuration. Its JSON form is the contract
// (DESIGN, third phase): unknown keys are refused, an absent key takes
// the default Parse documents, and SHA256 is the digest of its canonical
// encoding (Canonical), which a recording keeps to name the configuration
// its runs used.
type Spec struct {
	// Name is 1-64 lower-case letters, digits, '.', '_' or '-'.
	Name string `json:"name"`
	// Description is for people (--list); it decides nothing and is left
	// out of the digest.
	Description string `json:"description,omitempty"`
	// Tokenizer is TokenizerSeed (default) or TokenizerStemmed.
	Tokenizer string `json:"tokenizer"`
	// StopWords is StopNone (default), StopEnglish or StopQuestions: the
	// list's words are dropped from the query (a query of stop words alone keeps them,
	// so it still searches what the seed would).
	StopWords string `json:"stop_words"`
	// Fields weigh each field's bm25: the passage text, its title (the
	// page's and section's headings) and its anchor (the documented
	// object or section id in its URL's fragment, or the page's file name
	// when it has none).
	Fields Fields `json:"fields"`
	// K is the agent's search depth under this configuration; 0 means the
	// pack's search_k.
	K int `json:"k"`
	// Proximity boosts passages where query terms occur near each other.
	Proximity *Proximity `json:"proximity,omitempty"`
	// Expansion adds terms to the query (pseudo-relevance feedback).
	Expansion *Expansion `json:"expansion,omitempty"`
	// Fusion merges the lexical ranking with a vector branch.
	Fusion *Fusion `json:"fusion,omitempty"`
	// SecondStage reorders the first stage's top candidates.
	SecondStage SecondStage `json:"second_stage"`
}

// Fields are bm25 weights per field; 0 leaves a field out. Absent keys
// take the defaults (text 1, title 0, anchor 0).
type Fields struct {
	Text   float64 `json:"text"`
	Title  float64 `json:"title"`
	Anchor float64 `json:"anchor"`
}

// Proximity is a BM25TP-style boost (Rasolofo and Savoy 2003): each pair
// of distinct query terms occurring within Window tokens of each other in
// a passage's text adds 1/d² per occurrence pair, saturated as bm25
// saturates a frequency and weighed by the smaller idf of the two, times
// Weight. It reorders the first Depth candidates of the field score.
type Proximity struct {
	Window int     `json:"window"`
	Weight float64 `json:"weight"`
	Depth  int     `json:"depth"`
}

// Expansion is RM3 pseudo-relevance feedback: the first Docs passages of
// the first ranking give a relevance model, its Terms most likely terms
// (stop words left out) join the query, weighed Weight against the
// original query's 1 - Weight.
type Expansion struct {
	Method string  `json:"method"`
	Docs   int     `json:"docs"`
	Terms  int     `json:"terms"`
	Weight float64 `json:"weight"`
}

// Fusion is reciprocal rank fusion (K 60 as in the second document's
// hybrid) of the lexical ranking with a vector branch: passage vectors
// made by Model (its id, as its files' manifest names it), kept beside
// the pack in the file Vectors (a plain file name: `ragagent corpus
// embed` writes it). Each branch ranks its best Depth passages of the
// version and a passage gets 1/(K+rank) from each branch that ranks it.
// Such a configuration needs the model and the vectors; it runs only
// where both are given (Base.OpenModels) and is refused otherwise.
type Fusion struct {
	Method  string `json:"method"`
	K       int    `json:"k"`
	Depth   int    `json:"depth"`
	Model   string `json:"model"`
	Vectors string `json:"vectors"`
}

// SecondStage is StageNone (default), StageCoverage (the first Depth
// candidates reordered by the share of distinct query terms they hold,
// ties in first-stage order), StageCrossEncoder (the first Depth
// reordered by a cross-encoder's logit for (query, passage text), Model
// its id; it runs where the model is given, Base.OpenModels) or
// StageListwise (a live call: declared, and refused).
type SecondStage struct {
	Method string `json:"method"`
	Depth  int    `json:"depth,omitempty"`
	Model  string `json:"model,omitempty"`
}

// Bounds of a spec's numbers.
const (
	MaxK               = 100
	MaxWeight          = 100.0
	MaxWindow          = 64
	MaxDepth           = 1000
	MaxFeedback        = 100
	DefaultRRFK        = 60
	DefaultFusionDepth = 100
	// DefaultListwiseDepth and MaxListwiseDepth bound a listwise stage's
	// candidates: every one's text goes into one request.
	DefaultListwiseDepth = 10
	MaxListwiseDepth     = 20
	MaxSpecBytes         = 64 << 10
	DefaultDepth         = 50
	MaxNameLength        = 64
	maxTextLength        = 4096
	maxDescription       = 1000
)

var (
	validName  = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	validModel = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$`)
	validFile  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// clip is a value short enough to quote in a one-line error.
func clip(v string) string {
	if len(v) > 80 {
		return v[:80] + "..."
	}
	return v
}

// Parse reads one configuration from JSON, refusing unknown or repeated
// keys, a value out of range or a stage this package does not know, with
// a reason.InvalidConfig error naming the field. Absent keys take their
// defaults: tokenizer "seed", stop_words "none", fields {text 1, title 0,
// anchor 0}, k 0 (the pack's), no proximity, expansion or fusion, second
// stage "none"; within proximity, expansion and fusion absent numbers take
// theirs (window 8, weight 1, depth 50; docs 10, terms 10, weight 0.5;
// k 60).
func Parse(data []byte) (Spec, error) {
	if len(data) > MaxSpecBytes {
		return Spec{}, reason.New(reason.InvalidConfig, "the configuration has %d bytes; the limit is %d", len(data), MaxSpecBytes)
	}
	var raw struct {
		Spec
		Proximity *Proximity `json:"proximity,omitempty"`
		Expansion *Expansion `json:"expansion,omitempty"`
		Fusion    *Fusion    `json:"fusion,omitempty"`
	}
	raw.Spec = Spec{Tokenizer: TokenizerSeed, StopWords: StopNone, Fields: Fields{Text: 1}, SecondStage: SecondStage{Method: StageNone}}
	// Sub-objects decode over their defaults, so an absent number takes it.
	raw.Proximity = &Proximity{Window: 8, Weight: 1, Depth: DefaultDepth}
	raw.Expansion = &Expansion{Method: ExpansionRM3, Docs: 10, Terms: 10, Weight: 0.5}
	raw.Fusion = &Fusion{Method: FusionRRF, K: DefaultRRFK, Depth: DefaultFusionDepth}
	present, err := topKeys(data)
	if err != nil {
		return Spec{}, err
	}
	if err := jsonfile.Decode(data, &raw); err != nil {
		return Spec{}, reason.New(reason.InvalidConfig, "the configuration is not valid: %v", err)
	}
	s := raw.Spec
	if present["proximity"] && raw.Proximity != nil {
		s.Proximity = raw.Proximity
	}
	if present["expansion"] && raw.Expansion != nil {
		s.Expansion = raw.Expansion
	}
	if present["fusion"] && raw.Fusion != nil {
		s.Fusion = raw.Fusion
	}
	if s.SecondStage.Method == "" {
		s.SecondStage.Method = StageNone
	}
	if err := s.Validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// topKeys are the keys of data's top-level object.
func topKeys(data []byte) (map[string]bool, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, reason.New(reason.InvalidConfig, "the configuration is not a JSON object: %v", err)
	}
	out := map[string]bool{}
	for k, v := range top {
		out[k] = string(v) != "null"
	}
	return out, nil
}

// Validate refuses a spec with a value out of its rules, naming the field
// (reason.InvalidConfig).
func (s Spec) Validate() error {
	bad := func(format string, a ...any) error {
		where := "configuration"
		if s.Name != "" && validName.MatchString(s.Name) && len(s.Name) <= MaxNameLength {
			where = "configuration " + s.Name
		}
		return reason.New(reason.InvalidConfig, "%s: %s", where, fmt.Sprintf(format, a...))
	}
	weight := func(field string, w float64, positive bool) error {
		if math.IsNaN(w) || w < 0 || w > MaxWeight || (positive && w == 0) {
			return bad("%s must be a number from 0 to %g, got %g", field, MaxWeight, w)
		}
		return nil
	}
	whole := func(field string, n, lo, hi int) error {
		if n < lo || n > hi {
			return bad("%s must be a whole number from %d to %d, got %d", field, lo, hi, n)
		}
		return nil
	}
	switch {
	case s.Name == "" || len(s.Name) > MaxNameLength || !validName.MatchString(s.Name):
		return bad("name %q must be 1-%d lower-case letters, digits, '.', '_' or '-'", s.Name, MaxNameLength)
	case len(s.Description) > maxDescription:
		return bad("description must be at most %d bytes", maxDescription)
	case s.Tokenizer != TokenizerSeed && s.Tokenizer != TokenizerStemmed:
		return bad("tokenizer %q is not %q or %q", s.Tokenizer, TokenizerSeed, TokenizerStemmed)
	case s.StopWords != StopNone && s.StopWords != StopEnglish && s.StopWords != StopQuestions:
		return bad("stop_words %q is not %q, %q or %q", s.StopWords, StopNone, StopEnglish, StopQuestions)
	}
	for _, f := range []struct {
		name string
		w    float64
	}{{"fields.text", s.Fields.Text}, {"fields.title", s.Fields.Title}, {"fields.anchor", s.Fields.Anchor}} {
		if err := weight(f.name, f.w, false); err != nil {
			return err
		}
	}
	if s.Fields.Text+s.Fields.Title+s.Fields.Anchor == 0 {
		return bad("fields must weigh at least one field above 0")
	}
	if err := whole("k", s.K, 0, MaxK); err != nil {
		return err
	}
	if p := s.Proximity; p != nil {
		if err := whole("proximity.window", p.Window, 1, MaxWindow); err != nil {
			return err
		}
		if err := weight("proximity.weight", p.Weight, true); err != nil {
			return err
		}
		if err := whole("proximity.depth", p.Depth, 1, MaxDepth); err != nil {
			return err
		}
	}
	if e := s.Expansion; e != nil {
		if e.Method != ExpansionRM3 {
			return bad("expansion.method %q is not %q", e.Method, ExpansionRM3)
		}
		if err := whole("expansion.docs", e.Docs, 1, MaxFeedback); err != nil {
			return err
		}
		if err := whole("expansion.terms", e.Terms, 1, MaxFeedback); err != nil {
			return err
		}
		if math.IsNaN(e.Weight) || e.Weight <= 0 || e.Weight >= 1 {
			return bad("expansion.weight must be above 0 and below 1, got %g", e.Weight)
		}
	}
	if f := s.Fusion; f != nil {
		if f.Method != FusionRRF {
			return bad("fusion.method %q is not %q", f.Method, FusionRRF)
		}
		if err := whole("fusion.k", f.K, 1, 1000); err != nil {
			return err
		}
		if err := whole("fusion.depth", f.Depth, 1, MaxDepth); err != nil {
			return err
		}
		if f.Model == "" || f.Vectors == "" {
			return bad("fusion needs a model and a vectors file")
		}
		if !validModel.MatchString(f.Model) || len(f.Model) > 200 {
			return bad("fusion.model %q is not a model id (owner/name)", clip(f.Model))
		}
		if !validFile.MatchString(f.Vectors) || len(f.Vectors) > 200 {
			return bad("fusion.vectors %q is not a plain file name beside the pack (letters, digits, '.', '_', '-')", clip(f.Vectors))
		}
	}
	st := s.SecondStage
	switch st.Method {
	case StageNone:
		if st.Depth != 0 {
			return bad("second_stage.depth applies to a second stage, not to %q", StageNone)
		}
	case StageCoverage, StageCrossEncoder:
		if err := whole("second_stage.depth", st.Depth, 0, MaxDepth); err != nil {
			return err
		}
	case StageListwise:
		if err := whole("second_stage.depth", st.Depth, 0, MaxListwiseDepth); err != nil {
			return err
		}
	default:
		return bad("second_stage.method %q is not one of %q, %q, %q, %q", st.Method, StageNone, StageCoverage, StageCrossEncoder, StageListwise)
	}
	switch {
	case st.Method == StageCrossEncoder && st.Model == "":
		return bad("second_stage.model is required for %q: the cross-encoder's id (owner/name)", StageCrossEncoder)
	case st.Method == StageCrossEncoder && (!validModel.MatchString(st.Model) || len(st.Model) > 200):
		return bad("second_stage.model %q is not a model id (owner/name)", clip(st.Model))
	case st.Method == StageListwise && st.Model != "" && (!validModel.MatchString(st.Model) || len(st.Model) > 200):
		return bad("second_stage.model %q is not a model name", clip(st.Model))
	case st.Method != StageCrossEncoder && st.Method != StageListwise && st.Model != "":
		return bad("second_stage.model applies to %q or %q, not to %q", StageCrossEncoder, StageListwise, st.Method)
	}
	return nil
}

// Canonical is the spec's canonical JSON encoding: every setting in a
// fixed key order (struct order, defaults written out), the description
// left out, numbers as Go's shortest round-trip form, so the same settings
// give the same bytes natively and under WebAssembly.
func (s Spec) Canonical() []byte {
	s.Description = ""
	data, err := json.Marshal(s)
	if err != nil {
		// A Spec holds strings, whole numbers and finite floats (Validate
		// refuses NaN; weights are bounded): it always encodes.
		panic(err)
	}
	return data
}

// SHA256 is the lower-case hex sha256 of Canonical: what a recording
// keeps to say which configuration its runs used.
func (s Spec) SHA256() string {
	sum := sha256.Sum256(s.Canonical())
	return hex.EncodeToString(sum[:])
}

// IsSeed reports whether s ranks exactly as the seed's search does: the
// seed's tokenizer, no stop words, the text alone, no proximity,
// expansion, fusion or second stage. Such a spec is searched by
// store.Search itself, whatever its name.
func (s Spec) IsSeed() bool {
	return s.Tokenizer == TokenizerSeed && s.StopWords == StopNone && s.Fields == (Fields{Text: 1}) &&
		s.Proximity == nil && s.Expansion == nil && s.Fusion == nil && s.SecondStage.Method == StageNone
}

// TermKey is the form a query term (a lower-case [a-z0-9]+ token) is
// matched in under s: the term itself under the seed's tokenizer, its
// Snowball stem under the stemmed one. Two terms with one key find the
// same passages, so a reader searching a word's other forms (key/keys)
// learns nothing new when they share it (core/policy).
func (s Spec) TermKey(t string) string {
	if s.Tokenizer == TokenizerStemmed {
		return stemWord(t)
	}
	return t
}

// SearchK is the agent's search depth under s for a pack whose search_k
// is packK.
func (s Spec) SearchK(packK int) int {
	if s.K > 0 {
		return s.K
	}
	return packK
}

// Runnable reports why s cannot run offline, with no model at hand (a
// vector branch, a cross-encoder or a live listwise stage), or nil.
func (s Spec) Runnable() error {
	switch {
	case s.Fusion != nil:
		return reason.New(reason.UnknownConfig, "configuration %s fuses a vector branch (model %s, vectors %s beside the pack), which needs the model and the pack's vectors: `ragagent corpus embed` makes them and `ragagent retrieval --model DIR --vectors DIR` runs it", s.Name, s.Fusion.Model, s.Fusion.Vectors)
	case s.SecondStage.Method == StageCrossEncoder:
		return reason.New(reason.UnknownConfig, "configuration %s reranks with the cross-encoder %s, which needs the model: `ragagent retrieval --model DIR` runs it", s.Name, s.SecondStage.Model)
	case s.SecondStage.Method == StageListwise:
		return reason.New(reason.UnknownConfig, "configuration %s reranks with Gemini listwise calls, which an offline search does not make: `ragagent retrieval --live` plans and sends them through the ledger, `--gemini FILE` replays a recording of them", s.Name)
	}
	return nil
}
