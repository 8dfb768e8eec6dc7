package retrieval

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/ragagentlab/ragagent/core/store"
)

// bm25's constants, FTS5's defaults, for every field.
const (
	k1 = 1.2
	b  = 0.75
)

// maxCachedTexts bounds the tokenized texts a Base keeps for proximity
// and feedback; past it the cache starts again.
const maxCachedTexts = 8192

// Base is what the configurations over one index share, built on first
// use and kept: the vocabulary's stem groups, each term's postings per
// field, the title and anchor fields' own small indexes, and tokenized
// texts. It reads the index through store's statistics accessors
// (Vocabulary, Postings, DocTokens, Labels, Text), the very counts FTS5's
// bm25 reads. Like store.Index it is not safe for concurrent use.
type Base struct {
	ix      *store.Index
	n       int
	verID   []int32          // each doc's version, numbered
	verIDs  map[string]int32 // the numbers
	textLen []float64
	textAvg float64

	stemOf   map[string]string
	vocab    []string // the index's vocabulary, sorted, read once
	postings [2]map[string]*plist
	fields   [2][2]*fieldIndex // [tokenizer][title, anchor]
	texts    [2]map[int32][]string

	// Scratch for one search.
	acc     []float64
	stamp   []uint32
	gen     uint32
	touched []int32
}

// plist is a term's postings in one field: docs ascending, frequencies,
// and the field's idf of the term.
type plist struct {
	docs []int32
	tf   []float64
	idf  float64
}

// fieldIndex is a short field (title or anchor) indexed in memory.
type fieldIndex struct {
	postings map[string]*plist
	length   []float64
	avg      float64
}

// NewBase starts the shared structures of configurations over ix (nothing
// is read until a configuration needs it).
func NewBase(ix *store.Index) *Base {
	return &Base{ix: ix, n: ix.Len(), stemOf: map[string]string{},
		postings: [2]map[string]*plist{{}, {}}, texts: [2]map[int32][]string{{}, {}}}
}

// Searcher ranks an index's passages under one configuration. It has the
// method set of *store.Index's Search, so a caller treats both alike.
type Searcher struct {
	base *Base
	spec Spec
	tok  int // 0 seed, 1 stemmed

	// models are the vector branch's and the cross-encoder's (OpenModels),
	// queries the vector branch's query vectors.
	models  *Models
	queries map[string][]float32
}

// Open is NewBase(ix).Open(spec).
func Open(ix *store.Index, spec Spec) (*Searcher, error) { return NewBase(ix).Open(spec) }

// Open makes a searcher for spec over the base's index: a spec that
// ranks as the seed does (Spec.IsSeed) is searched by store.Search
// itself; one that needs a model or a live call is refused with
// reason.UnknownConfig (Spec.Runnable); an invalid one with
// reason.InvalidConfig.
func (bs *Base) Open(spec Spec) (*Searcher, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := spec.Runnable(); err != nil {
		return nil, err
	}
	return bs.open(spec)
}

// open is the searcher of a checked spec.
func (bs *Base) open(spec Spec) (*Searcher, error) {
	s := &Searcher{base: bs, spec: spec}
	if spec.Tokenizer == TokenizerStemmed {
		s.tok = 1
	}
	return s, nil
}

// Spec is the searcher's configuration.
func (s *Searcher) Spec() Spec { return s.spec }

// Search returns up to k passages of version (every version when it is
// "") for query, best first, Score the negated score (lower is better, as
// bm25() reports). Under a seed-equivalent spec it is store.Search's
// answer exactly. A query with no [a-z0-9] token is store.ErrNoTerms.
func (s *Searcher) Search(query string, k int, version string) ([]store.Hit, error) {
	if s.spec.IsSeed() {
		return s.base.ix.Search(query, k, version)
	}
	terms := store.Terms(query)
	if len(terms) == 0 {
		return nil, store.ErrNoTerms
	}
	if k < 1 {
		return nil, fmt.Errorf("retrieval: k must be at least 1, got %d", k)
	}
	return s.search(query, terms, k, version)
}

// queryTerms are a query's terms under the spec: stop words dropped
// (unless that drops them all), stemmed, each once in first-seen order.
func (s *Searcher) queryTerms(terms []string) []string {
	if stop := stopList(s.spec.StopWords); stop != nil {
		var kept []string
		for _, t := range terms {
			if !stop(t) {
				kept = append(kept, t)
			}
		}
		if len(kept) > 0 {
			terms = kept
		}
	}
	if s.tok == 0 {
		return terms
	}
	var out []string
	seen := map[string]bool{}
	for _, t := range terms {
		st := s.base.stem(t)
		if !seen[st] {
			seen[st] = true
			out = append(out, st)
		}
	}
	return out
}

type scored struct {
	doc   int32
	score float64
}

func (s *Searcher) search(query string, raw []string, k int, version string) ([]store.Hit, error) {
	bs := s.base
	if err := bs.prepare(); err != nil {
		return nil, err
	}
	want, ok := bs.versionFilter(version)
	if !ok {
		return nil, nil
	}
	terms := s.queryTerms(raw)
	weights := make([]float64, len(terms))
	for i := range weights {
		weights[i] = 1
	}
	depth := k
	if p := s.spec.Proximity; p != nil {
		depth = max(depth, p.Depth)
	}
	if st := s.spec.SecondStage; st.Method != StageNone {
		depth = max(depth, stageDepth(st))
	}
	if f := s.spec.Fusion; f != nil {
		depth = max(depth, f.Depth)
	}
	ranked, err := s.rank(terms, weights, want, depth)
	if err != nil {
		return nil, err
	}
	if e := s.spec.Expansion; e != nil && len(ranked) > 0 {
		eterms, eweights, err := s.expand(terms, ranked[:min(len(ranked), e.Docs)], e)
		if err != nil {
			return nil, err
		}
		if ranked, err = s.rank(eterms, eweights, want, depth); err != nil {
			return nil, err
		}
	}
	if p := s.spec.Proximity; p != nil {
		if err := s.proximity(terms, ranked[:min(len(ranked), p.Depth)], p); err != nil {
			return nil, err
		}
	}
	if s.spec.Fusion != nil {
		if ranked, err = s.fuse(query, ranked, want); err != nil {
			return nil, err
		}
	}
	switch st := s.spec.SecondStage; st.Method {
	case StageCoverage:
		if err := s.coverage(terms, ranked[:min(len(ranked), stageDepth(st))]); err != nil {
			return nil, err
		}
	case StageCrossEncoder:
		if err := s.crossEncode(query, ranked[:min(len(ranked), stageDepth(st))]); err != nil {
			return nil, err
		}
	case StageListwise:
		if err := s.listwise(query, ranked[:min(len(ranked), stageDepth(st))]); err != nil {
			return nil, err
		}
	}
	ranked = ranked[:min(k, len(ranked))]
	hits := make([]store.Hit, len(ranked))
	for i, c := range ranked {
		hits[i] = store.Hit{Doc: int(c.doc), Rank: i + 1, Score: -1.0 * c.score}
	}
	return hits, nil
}

func stageDepth(st SecondStage) int {
	switch {
	case st.Depth > 0:
		return st.Depth
	case st.Method == StageListwise:
		return DefaultListwiseDepth
	}
	return DefaultDepth
}

// rank scores every doc holding a term in a weighted field (want < 0: any
// version) and returns the best depth, best first, ties by doc order.
func (s *Searcher) rank(terms []string, weights []float64, want int32, depth int) ([]scored, error) {
	bs := s.base
	bs.begin()
	f := s.spec.Fields
	for i, t := range terms {
		if f.Text > 0 {
			p, err := bs.textPostings(s.tok, t)
			if err != nil {
				return nil, err
			}
			bs.add(p, float64(weights[i]*f.Text), bs.textLen, bs.textAvg)
		}
		for j, w := range []float64{f.Title, f.Anchor} {
			if w == 0 {
				continue
			}
			fi, err := bs.field(s.tok, j)
			if err != nil {
				return nil, err
			}
			if p := fi.postings[t]; p != nil {
				bs.add(p, float64(weights[i]*w), fi.length, fi.avg)
			}
		}
	}
	return top(bs.touched, bs.acc, bs.verID, want, depth), nil
}

// better is the ranking's total order: the higher score first, ties by
// doc order.
func better(x, y scored) bool {
	if x.score != y.score {
		return x.score > y.score
	}
	return x.doc < y.doc
}

func sortScored(out []scored) {
	sort.Slice(out, func(i, j int) bool { return better(out[i], out[j]) })
}

// top is the best depth of the touched docs of the wanted version (want <
// 0: any), best first: a bounded heap keeps them (its root the worst kept),
// so a common term's thousands of docs are never sorted whole. The order
// is total, so the result is what sorting everything would give.
func top(touched []int32, acc []float64, verID []int32, want int32, depth int) []scored {
	if depth <= 0 {
		return nil
	}
	h := make([]scored, 0, min(depth, len(touched)))
	down := func(i int) {
		for {
			w, l, r := i, 2*i+1, 2*i+2
			if l < len(h) && better(h[w], h[l]) {
				w = l
			}
			if r < len(h) && better(h[w], h[r]) {
				w = r
			}
			if w == i {
				return
			}
			h[i], h[w] = h[w], h[i]
			i = w
		}
	}
	for _, d := range touched {
		if want >= 0 && verID[d] != want {
			continue
		}
		c := scored{doc: d, score: acc[d]}
		if len(h) < depth {
			h = append(h, c)
			for i := len(h) - 1; i > 0; {
				p := (i - 1) / 2
				if !better(h[p], h[i]) {
					break
				}
				h[i], h[p] = h[p], h[i]
				i = p
			}
			continue
		}
		if better(c, h[0]) {
			h[0] = c
			down(0)
		}
	}
	sortScored(h)
	return h
}

// add accumulates w times p's bm25 contribution into each doc's score.
func (bs *Base) add(p *plist, w float64, length []float64, avg float64) {
	for j, d := range p.docs {
		if bs.stamp[d] != bs.gen {
			bs.stamp[d] = bs.gen
			bs.acc[d] = 0
			bs.touched = append(bs.touched, d)
		}
		bs.acc[d] += float64(w * bm25(p.tf[j], p.idf, length[d], avg))
	}
}

// bm25 is one term's contribution: idf * tf(k1+1) / (tf + k1(1-b+b·len/avg)),
// each product rounded (no fused multiply-add), so native and WebAssembly
// agree to the bit.
func bm25(tf, idf, length, avg float64) float64 {
	norm := float64(k1 * float64(float64(1-b)+float64(float64(b*length)/avg)))
	return float64(idf * float64(float64(tf*(k1+1))/float64(tf+norm)))
}

// idf is FTS5's: ln((N - n + 0.5) / (n + 0.5)), at least 1e-6.
func idf(n, df int) float64 {
	x := ln(float64(float64(n-df)+0.5) / float64(float64(df)+0.5))
	if x <= 0 {
		return 1e-6
	}
	return x
}

func (bs *Base) begin() {
	bs.gen++
	if bs.gen == 0 {
		clear(bs.stamp)
		bs.gen = 1
	}
	bs.touched = bs.touched[:0]
}

// prepare reads what every configuration needs: versions and text lengths.
func (bs *Base) prepare() error {
	if bs.acc != nil {
		return nil
	}
	tokens, err := bs.ix.DocTokens()
	if err != nil {
		return err
	}
	bs.verIDs = map[string]int32{}
	bs.verID = make([]int32, bs.n)
	for i, v := range bs.ix.DocVersions() {
		id, ok := bs.verIDs[v]
		if !ok {
			id = int32(len(bs.verIDs))
			bs.verIDs[v] = id
		}
		bs.verID[i] = id
	}
	bs.textLen = make([]float64, bs.n)
	total := 0
	for i, t := range tokens {
		bs.textLen[i] = float64(t)
		total += t
	}
	bs.textAvg = float64(total) / float64(max(bs.n, 1))
	if bs.textAvg == 0 {
		bs.textAvg = 1
	}
	bs.acc, bs.stamp = make([]float64, bs.n), make([]uint32, bs.n)
	return nil
}

// versionFilter is version's number (-1 for every version), false when
// no doc has it.
func (bs *Base) versionFilter(version string) (int32, bool) {
	if version == "" {
		return -1, true
	}
	id, ok := bs.verIDs[version]
	return id, ok
}

// stem is the Snowball English stem of a token, cached.
func (bs *Base) stem(t string) string {
	if st, ok := bs.stemOf[t]; ok {
		return st
	}
	st := stemWord(t)
	if len(bs.stemOf) < 1<<20 {
		bs.stemOf[t] = st
	}
	return st
}

// textPostings are a term's postings in the text: FTS5's own for the
// seed's tokenizer; for the stemmed one, the union of the postings of
// every vocabulary term with that stem, frequencies added.
func (bs *Base) textPostings(tok int, t string) (*plist, error) {
	if p, ok := bs.postings[tok][t]; ok {
		return p, nil
	}
	var p *plist
	if tok == 0 {
		docs, tf, err := bs.ix.Postings(t)
		if err != nil {
			return nil, err
		}
		p = &plist{docs: docs, tf: tf}
	} else {
		group, err := bs.stemGroup(t)
		if err != nil {
			return nil, err
		}
		if len(group) == 1 {
			docs, tf, err := bs.ix.Postings(group[0])
			if err != nil {
				return nil, err
			}
			p = &plist{docs: docs, tf: tf}
		} else {
			sum := map[int32]float64{}
			for _, term := range group {
				docs, tf, err := bs.ix.Postings(term)
				if err != nil {
					return nil, err
				}
				for j, d := range docs {
					sum[d] += tf[j]
				}
			}
			p = &plist{docs: make([]int32, 0, len(sum))}
			for d := range sum {
				p.docs = append(p.docs, d)
			}
			sort.Slice(p.docs, func(i, j int) bool { return p.docs[i] < p.docs[j] })
			p.tf = make([]float64, len(p.docs))
			for j, d := range p.docs {
				p.tf[j] = sum[d]
			}
		}
	}
	p.idf = idf(bs.n, len(p.docs))
	bs.postings[tok][t] = p
	return p, nil
}

// stemGroup is the vocabulary terms whose stem is st. A Snowball English
// stem keeps all but at most its last two letters of its word (a suffix
// replaced, "ability" to "abl", "cried" to "cri", "dying" to "die"), so
// only the terms beginning with those letters are stemmed to find them:
// a stemmed search never stems the whole vocabulary.
func (bs *Base) stemGroup(st string) ([]string, error) {
	if bs.vocab == nil {
		vocab, err := bs.ix.Vocabulary()
		if err != nil {
			return nil, err
		}
		bs.vocab = vocab
		if bs.vocab == nil {
			bs.vocab = []string{}
		}
	}
	prefix := st
	if len(prefix) > 1 {
		prefix = prefix[:max(1, len(prefix)-2)]
	}
	var group []string
	for i := sort.SearchStrings(bs.vocab, prefix); i < len(bs.vocab) && strings.HasPrefix(bs.vocab[i], prefix); i++ {
		if bs.stem(bs.vocab[i]) == st {
			group = append(group, bs.vocab[i])
		}
	}
	return group, nil
}

// field is the title (j 0) or anchor (j 1) field's index under a
// tokenizer, built once from the docs' labels.
func (bs *Base) field(tok, j int) (*fieldIndex, error) {
	if fi := bs.fields[tok][j]; fi != nil {
		return fi, nil
	}
	titles, urls, err := bs.ix.Labels()
	if err != nil {
		return nil, err
	}
	for jj, texts := range [][]string{titles, anchors(urls)} {
		fi := &fieldIndex{postings: map[string]*plist{}, length: make([]float64, bs.n)}
		total := 0
		for d, text := range texts {
			toks := bs.tokens(tok, text)
			fi.length[d] = float64(len(toks))
			total += len(toks)
			counts := map[string]float64{}
			var order []string
			for _, t := range toks {
				if counts[t] == 0 {
					order = append(order, t)
				}
				counts[t]++
			}
			for _, t := range order {
				p := fi.postings[t]
				if p == nil {
					p = &plist{}
					fi.postings[t] = p
				}
				p.docs = append(p.docs, int32(d))
				p.tf = append(p.tf, counts[t])
			}
		}
		fi.avg = float64(total) / float64(max(bs.n, 1))
		if fi.avg == 0 {
			fi.avg = 1
		}
		for _, p := range fi.postings {
			p.idf = idf(bs.n, len(p.docs))
		}
		bs.fields[tok][jj] = fi
	}
	return bs.fields[tok][j], nil
}

// anchors are each URL's anchor text: its fragment, or without one the
// page's file name less its extension.
func anchors(urls []string) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		if _, frag, ok := strings.Cut(u, "#"); ok {
			out[i] = frag
			continue
		}
		page := u[strings.LastIndex(u, "/")+1:]
		if dot := strings.LastIndex(page, "."); dot > 0 {
			page = page[:dot]
		}
		out[i] = page
	}
	return out
}

// tokens are text's [a-z0-9]+ runs after ASCII lower-casing, every one in
// order (stemmed under the stemmed tokenizer): the query's tokenizer over
// a field's text.
func (bs *Base) tokens(tok int, text string) []string {
	var out []string
	start := -1
	lower := []byte(text)
	for i, c := range lower {
		if 'A' <= c && c <= 'Z' {
			lower[i] = c + 'a' - 'A'
			c = lower[i]
		}
		alnum := ('a' <= c && c <= 'z') || ('0' <= c && c <= '9')
		if alnum && start < 0 {
			start = i
		}
		if !alnum && start >= 0 {
			out = append(out, string(lower[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, string(lower[start:]))
	}
	if tok == 1 {
		for i, t := range out {
			out[i] = bs.stem(t)
		}
	}
	return out
}

// textTokens are a doc's text's tokens, cached.
func (bs *Base) textTokens(tok int, d int32) ([]string, error) {
	if t, ok := bs.texts[tok][d]; ok {
		return t, nil
	}
	text, err := bs.ix.Text(int(d))
	if err != nil {
		return nil, err
	}
	if len(bs.texts[tok]) >= maxCachedTexts {
		bs.texts[tok] = map[int32][]string{}
	}
	t := bs.tokens(tok, text)
	bs.texts[tok][d] = t
	return t, nil
}

// proximity adds BM25TP's term-pair score to each candidate and re-sorts
// them.
func (s *Searcher) proximity(terms []string, cands []scored, p *Proximity) error {
	if len(terms) < 2 {
		return nil
	}
	bs := s.base
	idfs := make([]float64, len(terms))
	index := map[string]int{}
	for i, t := range terms {
		pl, err := bs.textPostings(s.tok, t)
		if err != nil {
			return err
		}
		idfs[i] = pl.idf
		index[t] = i
	}
	pos := make([][]int, len(terms))
	for ci := range cands {
		c := &cands[ci]
		toks, err := bs.textTokens(s.tok, c.doc)
		if err != nil {
			return err
		}
		for i := range pos {
			pos[i] = pos[i][:0]
		}
		for at, t := range toks {
			if i, ok := index[t]; ok {
				pos[i] = append(pos[i], at)
			}
		}
		bonus := 0.0
		for i := range terms {
			for j := i + 1; j < len(terms); j++ {
				if len(pos[i]) == 0 || len(pos[j]) == 0 {
					continue
				}
				acc := 0.0
				for _, a := range pos[i] {
					for _, bpos := range pos[j] {
						d := a - bpos
						if d < 0 {
							d = -d
						}
						if d > 0 && d <= p.Window {
							acc += float64(1 / float64(d*d))
						}
					}
				}
				if acc > 0 {
					bonus += bm25(acc, min(idfs[i], idfs[j]), float64(len(toks)), bs.textAvg)
				}
			}
		}
		c.score += float64(p.Weight * bonus)
	}
	sortScored(cands)
	return nil
}

// coverage reorders candidates by the share of distinct query terms their
// text holds, ties in their order.
func (s *Searcher) coverage(terms []string, cands []scored) error {
	cov := make(map[int32]int, len(cands))
	for _, c := range cands {
		toks, err := s.base.textTokens(s.tok, c.doc)
		if err != nil {
			return err
		}
		have := map[string]bool{}
		for _, t := range toks {
			have[t] = true
		}
		for _, t := range terms {
			if have[t] {
				cov[c.doc]++
			}
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cov[cands[i].doc] > cov[cands[j].doc] })
	return nil
}

// expand is RM3: a relevance model from the feedback docs (each doc's
// term distribution weighed by its share of their scores; stop words,
// numbers and one-letter tokens left out), its e.Terms likeliest terms
// interpolated with the original query (each original term (1-w)/|q|,
// each feedback term w times its normalized probability).
func (s *Searcher) expand(terms []string, fb []scored, e *Expansion) ([]string, []float64, error) {
	total := 0.0
	for _, c := range fb {
		total += c.score
	}
	if total <= 0 {
		total = 1
	}
	rel := map[string]float64{}
	var seen []string
	for _, c := range fb {
		toks, err := s.base.textTokens(s.tok, c.doc)
		if err != nil {
			return nil, nil, err
		}
		if len(toks) == 0 {
			continue
		}
		wd := float64(c.score/total) / float64(len(toks))
		for _, t := range toks {
			if len(t) < 2 || isStopWord(t) || isNumber(t) {
				continue
			}
			if _, ok := rel[t]; !ok {
				seen = append(seen, t)
			}
			rel[t] += wd
		}
	}
	sort.SliceStable(seen, func(i, j int) bool {
		if rel[seen[i]] != rel[seen[j]] {
			return rel[seen[i]] > rel[seen[j]]
		}
		return seen[i] < seen[j]
	})
	top := seen[:min(len(seen), e.Terms)]
	sum := 0.0
	for _, t := range top {
		sum += rel[t]
	}
	out := append([]string(nil), terms...)
	weights := make([]float64, len(terms))
	at := map[string]int{}
	for i, t := range terms {
		weights[i] = float64(1-e.Weight) / float64(len(terms))
		at[t] = i
	}
	for _, t := range top {
		w := float64(e.Weight * rel[t] / sum)
		if i, ok := at[t]; ok {
			weights[i] += w
			continue
		}
		at[t] = len(out)
		out = append(out, t)
		weights = append(weights, w)
	}
	return out, weights, nil
}

func isNumber(t string) bool {
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return false
		}
	}
	return true
}

// ln is the natural logarithm computed in Go's portable code (the
// algorithm of Go's math.Log, from FreeBSD's e_log.c), with every product
// rounded: math.Log is assembly on amd64 and may differ in the last bit
// from the portable code WebAssembly runs, and a ranking must not.
func ln(x float64) float64 {
	const (
		ln2Hi = 6.93147180369123816490e-01
		ln2Lo = 1.90821492927058770002e-10
		l1    = 6.666666666666735130e-01
		l2    = 3.999999999940941908e-01
		l3    = 2.857142874366239149e-01
		l4    = 2.222219843214978396e-01
		l5    = 1.818357216161805012e-01
		l6    = 1.531383769920937332e-01
		l7    = 1.479819860511658591e-01
	)
	switch {
	case math.IsNaN(x) || math.IsInf(x, 1):
		return x
	case x < 0:
		return math.NaN()
	case x == 0:
		return math.Inf(-1)
	}
	f1, ki := math.Frexp(x)
	if f1 < math.Sqrt2/2 {
		f1 *= 2
		ki--
	}
	f := f1 - 1
	k := float64(ki)
	s := float64(f / float64(2+f))
	s2 := float64(s * s)
	s4 := float64(s2 * s2)
	t1 := float64(s2 * float64(l1+float64(s4*float64(l3+float64(s4*float64(l5+float64(s4*l7)))))))
	t2 := float64(s4 * float64(l2+float64(s4*float64(l4+float64(s4*l6)))))
	r := t1 + t2
	hfsq := float64(0.5 * float64(f*f))
	return float64(k*ln2Hi) - ((hfsq - (float64(s*float64(hfsq+r)) + float64(k*ln2Lo))) - f)
}
