// Package lab is an opened corpus (its index and authored cases) and the
// runner that turns runs into graded trial reports: one trial with a model
// (Trial), a recording replayed trial by trial (Replay), a planned batch
// (Plan, RunBatch). The reports themselves are core/report's vocabulary,
// which front ends read without this package. It takes bytes, not paths,
// so the same code runs natively and in the browser.
package lab

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/corpus"
	"github.com/ragagentlab/ragagent/core/evaluate"
	"github.com/ragagentlab/ragagent/core/model"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/core/report"
	"github.com/ragagentlab/ragagent/core/retrieval"
	"github.com/ragagentlab/ragagent/core/tools"
)

// Lab is an opened corpus, its index and the grading cases.
type Lab struct {
	// Snapshot is the corpus when it is held in memory (the seed, a JSON
	// pack); nil for an image pack, whose passages Library reads as needed.
	Snapshot *corpus.Snapshot
	Library  *tools.Library
	Cases    *evaluate.Cases
	// Pack is the corpus pack (nil for a lab opened on a bare snapshot).
	Pack *corpus.Pack
	// SearchK is how many candidates each agent search issues.
	SearchK int
	// CasesSHA256 is the receipt of the cases file the lab was opened with.
	CasesSHA256 string
	// Subject is what the lab's model is told the questions are about
	// (agent.Policy): "" for the reference text, byte for byte, the
	// manifest's title for a pack that is not Python's documentation
	// (PythonDocumentation).
	Subject string
	// TargetBase, when set, is the URL every passage's URL begins with
	// for a pack of files (the page's own documents): a question set's
	// target may then name a file and anchor under it as the page shows
	// it (evaluate.ParseCasesAt).
	TargetBase string

	// Retrieval is the configuration the lab's searches rank by: the
	// pack's default (its manifest's retrieval_config, seed when it names
	// none) or the one Under chose.
	Retrieval retrieval.Spec

	tools *memo // what runs use: the library, serialised and memoised
	// shared is what the lab and its views under other configurations
	// share: the index's lock and the views made so far.
	shared *shared
	rank   *ranking // what experiments keep, shared by the copies WithCases makes
}

type shared struct {
	mu    sync.Mutex
	views map[string]*Lab // by spec digest
}

// Under is the lab searching under another retrieval configuration (the
// same index, cases and subject; its own memo of searches; SearchK the
// spec's k or the pack's): made once per configuration and kept, never to
// be closed (closing the lab closes it).
func (l *Lab) Under(spec retrieval.Spec) (*Lab, error) {
	sum := spec.SHA256()
	if sum == l.Retrieval.SHA256() {
		return l, nil
	}
	l.shared.mu.Lock()
	defer l.shared.mu.Unlock()
	if v, ok := l.shared.views[sum]; ok {
		return v, nil
	}
	lib, err := l.Library.Under(spec)
	if err != nil {
		return nil, err
	}
	v := *l
	v.Library, v.Retrieval, v.tools = lib, spec, newMemo(lib, &l.shared.mu)
	v.SearchK = spec.SearchK(l.packK())
	l.shared.views[sum] = &v
	return &v, nil
}

// packK is the pack's own agent search k.
func (l *Lab) packK() int {
	if l.Pack != nil {
		return l.Pack.Manifest.SearchK
	}
	return agent.SearchK
}

// Open validates the snapshot and cases and builds the index.
func Open(snapshot, cases []byte) (*Lab, error) {
	snap, err := corpus.Parse(snapshot)
	if err != nil {
		return nil, err
	}
	lib, err := tools.Open(snap)
	if err != nil {
		return nil, err
	}
	return open(lib, cases)
}

// OpenPack opens a pack (its manifest and passages file, checked against
// each other with hash, nil for Go's sha256) with its cases (nil for
// none); see tools.OpenPack.
func OpenPack(manifest, passages, cases []byte, hash tools.Hasher) (*Lab, error) {
	return OpenPackWith(manifest, passages, nil, cases, hash)
}

// OpenPackWith is OpenPack with a JSON pack's lexicon (see
// tools.OpenPackWith).
func OpenPackWith(manifest, passages, lexicon, cases []byte, hash tools.Hasher) (*Lab, error) {
	m, err := corpus.ParseManifest(manifest)
	if err != nil {
		return nil, err
	}
	lib, err := tools.OpenPackWith(m, passages, lexicon, hash)
	if err != nil {
		return nil, err
	}
	return open(lib, cases)
}

// noCases is an empty cases file, for a pack nobody wrote cases for.
const noCases = `{"format": "` + evaluate.CasesFormat + `", "cases": []}`

// open checks the cases against the library's passages: every target id
// and URL must name a passage (a page-level URL some passage of its page),
// and every case's version be one of the pack's; a case that names no
// version takes the pack's default.
func open(lib *tools.Library, cases []byte) (*Lab, error) {
	if cases == nil {
		cases = []byte(noCases)
	}
	cs, err := evaluate.ParseCases(cases)
	if err != nil {
		lib.Close()
		return nil, err
	}
	if err := CheckCases(lib, cs); err != nil {
		lib.Close()
		return nil, err
	}
	snap := lib.Snapshot()
	sh := &shared{views: map[string]*Lab{}}
	l := &Lab{Snapshot: snap, Library: lib, Cases: cs, Pack: lib.Pack(), SearchK: agent.SearchK,
		CasesSHA256: corpus.SHA256(string(cases)), Retrieval: lib.Retrieval(), tools: newMemo(lib, &sh.mu), shared: sh, rank: &ranking{}}
	if l.Pack != nil {
		l.SearchK = l.Pack.Manifest.SearchK
		if !PythonDocumentation(l.Pack.Manifest) {
			l.Subject = l.Pack.Manifest.Title
		}
		if name := l.Pack.Manifest.RetrievalConfig; name != "" && (name != retrieval.Seed || l.Pack.Manifest.RetrievalSpec != nil) {
			spec, err := PackDefault(l.Pack.Manifest)
			if err != nil {
				lib.Close()
				return nil, fmt.Errorf("pack %s: retrieval_config: %w", l.Pack.Manifest.ID, err)
			}
			view, err := lib.Under(spec)
			if err != nil {
				lib.Close()
				return nil, fmt.Errorf("pack %s: retrieval_config: %w", l.Pack.Manifest.ID, err)
			}
			l.Library, l.Retrieval, l.tools = view, spec, newMemo(view, &sh.mu)
			l.SearchK = spec.SearchK(l.Pack.Manifest.SearchK)
		}
	}
	return l, nil
}

// PackDefault is a pack's default retrieval configuration: its
// retrieval_spec, which must carry retrieval_config's name, or else the
// built-in retrieval_config names (seed when absent).
func PackDefault(m *corpus.Manifest) (retrieval.Spec, error) {
	if m.RetrievalSpec != nil {
		spec, err := retrieval.Parse(m.RetrievalSpec)
		if err != nil {
			return retrieval.Spec{}, err
		}
		if spec.Name != m.RetrievalConfig {
			return retrieval.Spec{}, reason.New(reason.InvalidConfig, "retrieval_spec is named %q, retrieval_config %q", spec.Name, m.RetrievalConfig)
		}
		if err := spec.Runnable(); err != nil {
			return retrieval.Spec{}, err
		}
		return spec, nil
	}
	if m.RetrievalConfig == "" {
		return retrieval.Lookup(retrieval.Seed)
	}
	return retrieval.Lookup(m.RetrievalConfig)
}

// CheckCases gives the cases that name no version the pack's default and
// checks them against the library: each version is one of the pack's,
// each source id and target URL some passage's (a page-level URL, some
// passage of that page's). A refusal is reason.InvalidCases, naming the
// case and the field.
func CheckCases(lib *tools.Library, cs *evaluate.Cases) error {
	versions := map[string]bool{}
	if p := lib.Pack(); p != nil {
		cs.WithVersion(p.Manifest.DefaultVersion)
		for _, v := range p.Manifest.Versions {
			versions[v] = true
		}
	} else {
		for _, p := range lib.Snapshot().Passages {
			versions[p.Version] = true
		}
	}
	var urls []string
	for _, c := range cs.Cases {
		urls = append(urls, c.TargetURLs...)
	}
	found, err := lib.HasURLs(urls)
	if err != nil {
		return err
	}
	for i, c := range cs.Cases {
		where := fmt.Sprintf("case %d (%q)", i+1, c.ID)
		if c.Version == "" {
			return reason.New(reason.InvalidCases, "%s: version: absent, and the corpus has no default version", where)
		}
		if !versions[c.Version] {
			return reason.New(reason.InvalidCases, "%s: version: %s is not one of the corpus's versions (%s)", where, c.Version, strings.Join(sortedKeys(versions), ", "))
		}
		for _, s := range c.Sources {
			if ok, err := lib.Has(s); err != nil {
				return err
			} else if !ok {
				return reason.New(reason.InvalidCases, "%s: sources: %q is no passage's source id", where, s)
			}
		}
		for _, u := range c.TargetURLs {
			if !found[u] {
				if evaluate.PageLevel(u) {
					return reason.New(reason.InvalidCases, "%s: target_urls: no passage is on the page %s", where, u)
				}
				return reason.New(reason.InvalidCases, "%s: target_urls: no passage has the URL %s", where, u)
			}
		}
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// PythonDocumentation reports whether a pack is Python's own documentation,
// whose model keeps the reference policy text (it answers Python
// documentation questions): the seed, whose recordings replay only with
// that text, and the Python 3.11 pack. The engine knows both by id, as it
// knows their authored cases; a pack with another id gets its own title
// as its subject, whatever its passages are.
func PythonDocumentation(m *corpus.Manifest) bool {
	return m.ID == "seed" || m.ID == "python-3.11"
}

// Ref is the lab's pack as a trial names it; nil for a lab opened on a
// bare snapshot.
func (l *Lab) Ref() *report.CorpusRef {
	if l.Pack == nil {
		return nil
	}
	subject := l.Subject
	if subject == "" {
		subject = agent.PythonSubject
	}
	return &report.CorpusRef{ID: l.Pack.Manifest.ID, Title: l.Pack.Manifest.Title, Subject: subject}
}

// Close releases the index.
func (l *Lab) Close() error { return l.Library.Close() }

// Read reads one passage by source id, serialised with the lab's runs.
func (l *Lab) Read(sourceID string) (corpus.Passage, error) {
	return l.tools.Read(tools.Handle{SourceID: sourceID})
}

// Verify checks every passage of the lab's pack (see tools.Library.Verify).
func (l *Lab) Verify() error { return l.tools.Verify() }

// Replay runs every trial of a recording against the recorded exchanges,
// grading those whose case is known. onTrial, if set, sees each report as it
// is made (for progress). The error is only for a fault outside every
// trial's own outcome.
func (l *Lab) Replay(ctx context.Context, f *recording.File, onTrial func(report.Trial)) (*report.Set, error) {
	rep := &report.Set{Trials: []report.Trial{}}
	for _, t := range f.Trials {
		tr, err := l.ReplayTrial(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("trial %s: %w", t.ID, err)
		}
		rep.Add(tr)
		if onTrial != nil {
			onTrial(tr)
		}
	}
	return rep, nil
}

// RetrievalRecord is the lab's configuration as a recording names it: nil
// for seed (an absent field), so a seed run's recording is what it was
// before configurations existed.
func (l *Lab) RetrievalRecord() *recording.Retrieval {
	if l.Retrieval.Name == "" || (l.Retrieval.Name == retrieval.Seed && l.Retrieval.IsSeed()) {
		return nil
	}
	return &recording.Retrieval{Name: l.Retrieval.Name, SpecSHA256: l.Retrieval.SHA256()}
}

// Recorded is the configuration a recorded trial's searches ranked by:
// seed when it names none, else the known configuration (a pack's own
// default spec, say) or the built-in of its name whose digest it
// recorded; another is refused with config_mismatch (a recording made
// under a configuration this build does not have, or has changed).
func Recorded(r *recording.Retrieval, known ...retrieval.Spec) (retrieval.Spec, error) {
	if r == nil {
		return retrieval.Lookup(retrieval.Seed)
	}
	for _, spec := range known {
		if spec.Name == r.Name && spec.SHA256() == r.SpecSHA256 {
			return spec, nil
		}
	}
	spec, err := retrieval.Lookup(r.Name)
	if err != nil {
		return retrieval.Spec{}, reason.New(reason.ConfigMismatch, "the trial was recorded under retrieval configuration %q, which is neither a built-in here nor the pack's default", r.Name)
	}
	if got := spec.SHA256(); got != r.SpecSHA256 {
		return retrieval.Spec{}, reason.New(reason.ConfigMismatch, "the trial was recorded under retrieval configuration %q with settings of sha256 %s; this build's %q has %s", r.Name, r.SpecSHA256, r.Name, got)
	}
	return spec, nil
}

// Recorded is the package's Recorded knowing the lab's own configuration
// and its pack's default, so a trial recorded under a pack's spec (one
// `ragagent tune` chose, say) replays on that pack.
func (l *Lab) Recorded(r *recording.Retrieval) (retrieval.Spec, error) {
	known := []retrieval.Spec{l.Retrieval}
	if l.Pack != nil {
		if def, err := PackDefault(l.Pack.Manifest); err == nil {
			known = append(known, def)
		}
	}
	return Recorded(r, known...)
}

// ReplayTrial replays one trial under the retrieval configuration it was
// recorded under (Recorded), whatever the lab's own. Its elapsed time is
// the recorded one.
func (l *Lab) ReplayTrial(ctx context.Context, t recording.Trial) (report.Trial, error) {
	mode, _ := t.Mode.(string)
	tr := report.Trial{ID: t.ID, CaseID: t.CaseID, Split: t.Split, Repeat: t.Repeat, Mode: mode,
		Exchanges: len(t.Exchanges), ElapsedSeconds: t.ElapsedSeconds}
	spec, err := l.Recorded(t.Retrieval)
	if err != nil {
		return Refused(tr, err)
	}
	if l, err = l.Under(spec); err != nil {
		return Refused(tr, err)
	}
	task, err := agent.TaskFromJSON(t.Question, t.Version, t.Mode, t.Limits)
	if err != nil {
		return Refused(tr, err)
	}
	replayer := recording.NewReplayer(t)
	tr, err = l.Trial(ctx, tr, task, replayer, TrialOptions{})
	tr.ExchangesUsed = replayer.Used()
	if err == nil {
		tr.Timing = RecordedTiming(t, tr.Result)
	}
	return tr, err
}

// TrialOptions are how a trial runs besides its task and model.
type TrialOptions struct {
	// Clock times the run and its deadline; nil uses time.Now for the
	// deadline and keeps the report's elapsed time as given (a replay
	// reports the recorded one).
	Clock func() time.Time
	// OnStep, if set, sees each step as soon as it is final.
	OnStep func(agent.Step, *agent.Observation)
	// OnEnd, if set, is told the run's elapsed seconds as soon as it ends,
	// before it is graded; an error from it is a fault (a live recording
	// that cannot be saved).
	OnEnd func(elapsedSeconds float64) error
}

// Trial runs one task with a model and grades the result against the
// trial's case (tr.CaseID): the one place a run becomes a report, for
// replays, batches and single runs alike. A task refused before it starts
// is reported with its code and no result; an error is a fault outside the
// trial's own outcome.
func (l *Lab) Trial(ctx context.Context, tr report.Trial, task agent.Task, m model.Model, o TrialOptions) (report.Trial, error) {
	ctrl := agent.Controller{Tools: l.tools, Model: m, Clock: o.Clock, OnStep: o.OnStep, SearchK: l.SearchK, Subject: l.Subject}
	tr.Corpus = l.Ref()
	var timer *stepTimer
	if o.Clock != nil {
		timer = newStepTimer(o.Clock)
		ctrl.Model = timedModel{inner: m, t: timer}
		ctrl.OnStep = timer.onStep(o.OnStep)
	}
	res, err := ctrl.Run(ctx, task)
	if timer != nil && err == nil {
		end := o.Clock()
		elapsed := end.Sub(timer.started).Seconds()
		tr.ElapsedSeconds = &elapsed
		tr.Timing = timer.timing(res, timer.ms(end))
	}
	if o.OnEnd != nil && tr.ElapsedSeconds != nil {
		if endErr := o.OnEnd(*tr.ElapsedSeconds); endErr != nil {
			return tr, endErr
		}
	}
	if err != nil {
		return Refused(tr, err)
	}
	tr.Result = res
	if c, ok := l.Cases.Case(tr.CaseID); ok {
		checks := evaluate.Grade(c, res, l.Library.Aliases)
		tr.Checks = &checks
	}
	return tr, nil
}

// Refused reports a run refused before it started; an error without a
// reason code is a fault and is passed up.
func Refused(tr report.Trial, err error) (report.Trial, error) {
	code, ok := reason.Of(err)
	if !ok {
		return tr, err
	}
	tr.Error = &code
	tr.ErrorDetail = reason.DetailOf(err)
	return tr, nil
}

// Explain runs a scored search for people inspecting the index (the Corpus
// view), serialised with the lab's runs.
func (l *Lab) Explain(query string, k int, version string) ([]tools.Scored, error) {
	return l.tools.Explain(query, k, version)
}

// ExplainSnippets is Explain with each hit's URL, title and highlighted
// snippet.
func (l *Lab) ExplainSnippets(query string, k int, version string) ([]tools.Scored, error) {
	return l.tools.ExplainSnippets(query, k, version)
}
