package engine

import (
	"context"
	"fmt"
	"sync"

	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/core/retrieval"
	"github.com/ragagentlab/ragagent/core/vectors"
)

// Models give the configurations that need a model what they read: the
// passage vectors kept beside a pack, and an embedder per model. A front
// end implements it where a model can run (the command line: files beside
// the pack and a child process per model, internal/embedproc); an engine
// without Models refuses a vector branch with reason.UnknownConfig.
type Models interface {
	// Vectors reads the vectors file called name kept for pack.
	Vectors(pack, name string) ([]byte, error)
	// Embedder is model's embedder, started on first use and kept by the
	// front end, which closes it.
	Embedder(ctx context.Context, model string) (vectors.Embedder, error)
	// Scorer is the cross-encoder model's scorer, likewise.
	Scorer(ctx context.Context, model string) (retrieval.Scorer, error)
}

// vectorSets are the parsed vectors files, by pack, receipt and name.
type vectorSets struct {
	mu   sync.Mutex
	sets map[string]*vectors.Set
}

// modelsFor is what spec's models are over l's pack: for a vector branch
// the pack's vectors file (kept with keep), checked to be of this very
// build of the pack, and the embedder of the branch's model; for a
// cross-encoder stage its scorer.
func (e *Engine) modelsFor(ctx context.Context, models Models, keep bool, l *lab.Lab, spec retrieval.Spec) (retrieval.Models, error) {
	if models == nil {
		return retrieval.Models{}, spec.Runnable()
	}
	out := retrieval.Models{Ctx: ctx}
	if st := spec.SecondStage; st.Method == retrieval.StageCrossEncoder {
		sc, err := models.Scorer(ctx, st.Model)
		if err != nil {
			return out, reason.New(reason.UnknownConfig, "configuration %s: the cross-encoder %s: %v", spec.Name, st.Model, err)
		}
		out.Scorer = sc
	}
	if spec.Fusion == nil {
		return out, nil
	}
	m := l.Pack.Manifest
	name := spec.Fusion.Vectors
	set, err := e.vectorSet(models, keep, m.ID, m.PassagesSHA256, name)
	if err != nil {
		return out, err
	}
	emb, err := models.Embedder(ctx, spec.Fusion.Model)
	if err != nil {
		return out, reason.New(reason.UnknownConfig, "configuration %s: the model %s: %v", spec.Name, spec.Fusion.Model, err)
	}
	out.Vectors, out.Embedder = set, emb
	return out, nil
}

// vectorSet reads, parses and checks a pack's vectors file; with keep
// (the engine's own Models) the set is kept for the next request. A
// request's own Models may give other files under the same name, so
// theirs are read for that request only.
func (e *Engine) vectorSet(models Models, keep bool, pack, receipt, name string) (*vectors.Set, error) {
	key := pack + "\x00" + receipt + "\x00" + name
	e.vectors.mu.Lock()
	defer e.vectors.mu.Unlock()
	if s, ok := e.vectors.sets[key]; ok && keep {
		return s, nil
	}
	data, err := models.Vectors(pack, name)
	if err != nil {
		return nil, reason.New(reason.UnknownConfig, "pack %s has no vectors file %s: %v (`ragagent corpus embed` makes one)", pack, name, err)
	}
	s, err := vectors.Parse(data)
	if err != nil {
		return nil, reason.New(reason.InvalidConfig, "pack %s: the vectors file %s: %v", pack, name, err)
	}
	if h := s.Header; h.Pack != pack || h.PassagesSHA256 != receipt {
		return nil, reason.New(reason.InvalidConfig, "the vectors file %s is of pack %s with passages %s, not of pack %s with passages %s: embed this pack again",
			name, h.Pack, digest12(h.PassagesSHA256), pack, digest12(receipt))
	}
	if keep {
		if e.vectors.sets == nil {
			e.vectors.sets = map[string]*vectors.Set{}
		}
		e.vectors.sets[key] = s
	}
	return s, nil
}

// digest12 is a sha256 cut to its first 12 digits, for a message.
func digest12(sum string) string { return sum[:min(12, len(sum))] }

// EmbedRequest is `ragagent corpus embed`: a pack's passages embedded by
// one model, batch at a time.
type EmbedRequest struct {
	Corpus   string
	Embedder vectors.Embedder
	// Batch is how many passages go in one call; 0 means 32.
	Batch int
	// CreatedBy is recorded in the file's header.
	CreatedBy string
	// OnBatch, if set, sees each batch done: passages done of total.
	OnBatch func(done, total int)
}

// EmbedPack makes a pack's vectors file: every passage's title and text
// (vectors.PassageText) embedded in index order, the header binding the
// vectors to the pack's passages receipt and the embedder's model.
func (e *Engine) EmbedPack(ctx context.Context, req EmbedRequest) (*vectors.Set, error) {
	l, err := e.labFor(req.Corpus)
	if err != nil {
		return nil, err
	}
	model := req.Embedder.Model()
	if err := model.Check(); err != nil {
		return nil, err
	}
	passages, err := l.Passages()
	if err != nil {
		return nil, err
	}
	texts := make([]string, len(passages))
	for i, p := range passages {
		texts[i] = vectors.PassageText(p.Title, p.Text)
	}
	batch := req.Batch
	if batch == 0 {
		batch = 32
	}
	rows, err := vectors.EmbedAll(ctx, req.Embedder, texts, batch, req.OnBatch)
	if err != nil {
		if ctx.Err() != nil {
			return nil, reason.New(reason.Cancelled, "embedding was stopped; nothing was written")
		}
		return nil, err
	}
	m := l.Pack.Manifest
	set, err := vectors.New(vectors.Header{Pack: m.ID, PassagesSHA256: m.PassagesSHA256, Model: model, Text: vectors.TextTitled, CreatedBy: req.CreatedBy}, rows)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", m.ID, err)
	}
	return set, nil
}
