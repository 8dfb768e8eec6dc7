package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/ragagentlab/ragagent/core/engine"
)

// corpusJSON is a pack as GET /v1/corpora lists it (api: Corpus): what a
// client needs to name it in a run (its id, versions and default version)
// and to tell the packs apart (title, passages, search k), whether it is
// built in or the token's own upload, and its passages' receipt.
type corpusJSON struct {
	ID             string   `json:"id"`
	Title          string   `json:"title"`
	Language       string   `json:"language"`
	Versions       []string `json:"versions"`
	DefaultVersion string   `json:"default_version"`
	SearchK        int      `json:"search_k"`
	Passages       int      `json:"passages"`
	Origin         string   `json:"origin"`
	SHA256         string   `json:"sha256"`
	Bytes          *int64   `json:"bytes,omitempty"` // an upload's size on disk
}

// Where a corpus comes from.
const (
	OriginBuiltIn  = "built_in"
	OriginUploaded = "uploaded"
)

func corpusOf(p engine.PackSummary) corpusJSON {
	m := p.Manifest
	return corpusJSON{ID: m.ID, Title: m.Title, Language: m.Language, Versions: m.Versions,
		DefaultVersion: m.DefaultVersion, SearchK: m.SearchK, Passages: m.Passages,
		Origin: OriginBuiltIn, SHA256: m.PassagesSHA256}
}

// builtIn is whether id ("" is the seed) is one of the server's own packs.
func (s *Server) builtIn(id string) bool {
	if id == "" {
		return true
	}
	for _, p := range s.runs.Corpora() {
		if p.Manifest.ID == id {
			return true
		}
	}
	return false
}

// parserFor reads the run requests of a tenant (a token) that name a
// corpus: the server's built-in packs, and the tenant's own upload of
// that id (or, when it has none, its uploads, which the refusal lists).
// Another tenant's upload is unknown_corpus, as a pack that does not
// exist. Only a run naming an upload reads the store.
func (s *Server) parserFor(ctx context.Context, tenant, corpus string) (engine.RunParser, error) {
	p := s.runs
	if s.shelf == nil || s.builtIn(corpus) {
		return p, nil
	}
	own := []shelved{}
	sp, ok, err := s.shelf.lookup(ctx, tenant, corpus)
	switch {
	case err != nil:
		return p, err
	case ok:
		own = append(own, sp)
	default:
		if own, err = s.shelf.owned(ctx, tenant, s.badUpload); err != nil {
			return p, err
		}
	}
	if len(own) == 0 {
		return p, nil
	}
	p.Packs = append([]engine.PackSummary(nil), p.Corpora()...)
	for _, sp := range own {
		p.Packs = append(p.Packs, engine.PackSummary{Manifest: sp.manifest})
	}
	return p, nil
}

// specParser is parserFor as specOf asks for it.
func (s *Server) specParser(ctx context.Context, tenant string) func(string) (engine.RunParser, error) {
	return func(corpus string) (engine.RunParser, error) { return s.parserFor(ctx, tenant, corpus) }
}

// badUpload logs a kept pack that does not read.
func (s *Server) badUpload(err error) {
	s.log.Error("server fault", "during", "reading an uploaded corpus", "error", err.Error())
}

// openUpload has this program's engine hold the tenant's upload a run
// names (a no-op for a built-in pack, and where every kept pack is open:
// natively): a Worker's run object reads its passages from R2 the first
// time a run names it.
func (s *Server) openUpload(ctx context.Context, tenant, corpus string) error {
	if s.shelf == nil || s.shelf.resident || s.builtIn(corpus) {
		return nil
	}
	sp, ok, err := s.shelf.lookup(ctx, tenant, corpus)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("uploaded pack %s is gone", corpus)
	}
	eng, err := s.engine.get()
	if err != nil {
		return err
	}
	return s.shelf.open(ctx, eng, sp)
}

// listCorpora lists the packs the token's runs may name, the seed first,
// then the other built-in packs, then its own uploads.
func (s *Server) listCorpora(w http.ResponseWriter, r *http.Request) *apiError {
	if err := noQuery(r); err != nil {
		return err
	}
	out := []corpusJSON{}
	for _, p := range s.runs.Corpora() {
		out = append(out, corpusOf(p))
	}
	if s.shelf != nil {
		own, err := s.shelf.owned(r.Context(), tokenOf(r).ID, s.badUpload)
		if err != nil {
			return s.internal("listing the uploaded corpora", err)
		}
		for _, sp := range own {
			out = append(out, uploadedOf(sp))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"corpora": out})
	return nil
}

func uploadedOf(sp shelved) corpusJSON {
	c := corpusOf(engine.PackSummary{Manifest: sp.manifest})
	size := sp.Bytes
	c.Origin, c.Bytes = OriginUploaded, &size
	return c
}

func (s *Server) corporaRoute(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		s.authed(s.listCorpora, ScopeRead, ScopeRun, ScopeLive, ScopeCorpora)(w, r)
	case http.MethodPost:
		s.authed(s.uploadCorpus, ScopeCorpora)(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		refuse(http.StatusMethodNotAllowed, CodeMethodNotAllowed, r.Method+" is not allowed here; use GET or POST").write(w)
	}
}

func (s *Server) corpusRoute(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		s.authed(s.getCorpus, ScopeRead, ScopeRun, ScopeLive, ScopeCorpora)(w, r)
	case http.MethodDelete:
		s.authed(s.deleteCorpus, ScopeCorpora)(w, r)
	default:
		w.Header().Set("Allow", "GET, DELETE")
		refuse(http.StatusMethodNotAllowed, CodeMethodNotAllowed, r.Method+" is not allowed here; use GET or DELETE").write(w)
	}
}

func noCorpus(id string) *apiError {
	return refuse(http.StatusNotFound, CodeNotFound, fmt.Sprintf("no corpus %q among this token's corpora", id))
}

// findCorpus is the corpus the path names as the token sees it: a
// built-in pack or its own upload; another token's upload is not found,
// exactly like a pack that does not exist, so ids do not leak.
func (s *Server) findCorpus(r *http.Request) (corpusJSON, *shelved, *apiError) {
	id := r.PathValue("id")
	for _, p := range s.runs.Corpora() {
		if p.Manifest.ID == id {
			return corpusOf(p), nil, nil
		}
	}
	if s.shelf != nil {
		sp, ok, err := s.shelf.lookup(r.Context(), tokenOf(r).ID, id)
		if err != nil {
			return corpusJSON{}, nil, s.internal("reading the uploaded corpus", err)
		}
		if ok {
			return uploadedOf(sp), &sp, nil
		}
	}
	return corpusJSON{}, nil, noCorpus(id)
}

func (s *Server) getCorpus(w http.ResponseWriter, r *http.Request) *apiError {
	if err := noQuery(r); err != nil {
		return err
	}
	c, _, aerr := s.findCorpus(r)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, c)
	return nil
}

// noShelf refuses an upload or a deletion on a server that keeps no
// uploaded packs.
var noShelf = refuse(http.StatusServiceUnavailable, CodeUnavailable, "this server keeps no uploaded corpora (serve-api --corpora DIR; a Worker needs its R2 binding CORPORA)")

// uploadCorpus reads a gzip'd tar of a pack folder's files under the
// caps, checks it (unpackUpload), opens and verifies the pack as the
// command line's --pack does, and keeps it in the shelf's store under the
// token's quota: 201 with the corpus.
func (s *Server) uploadCorpus(w http.ResponseWriter, r *http.Request) *apiError {
	if err := noQuery(r); err != nil {
		return err
	}
	if s.shelf == nil {
		return noShelf
	}
	if s.isClosing() {
		return refuse(http.StatusServiceUnavailable, CodeUnavailable, "the server is shutting down")
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/gzip" {
		return refuse(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "the body must be application/gzip: a gzip'd tar of a pack folder's files")
	}
	sh := s.shelf
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, sh.maxBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return refuse(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, fmt.Sprintf("the upload is over %d bytes", sh.maxBody))
	}
	if err != nil {
		return refuse(http.StatusBadRequest, CodeInvalidPack, "the body could not be read")
	}
	u, err := unpackUpload(body, sh.maxBytes)
	if err != nil {
		return refuse(http.StatusUnprocessableEntity, CodeInvalidPack, err.Error())
	}
	body = nil
	ctx := r.Context()
	tenant := tokenOf(r).ID
	id := u.manifest.ID
	taken := func(holder string) *apiError {
		if holder == tenant {
			return refuse(http.StatusConflict, CodeCorpusExists, fmt.Sprintf("this token already has corpus %q; delete it first to replace it", id))
		}
		return refuse(http.StatusConflict, CodeCorpusExists, fmt.Sprintf("the id %q is taken on this server; give the pack another id (corpus build --id)", id))
	}
	// One upload at a time in this process: the quota, the id and the
	// engine's packs are read and changed together (another process's
	// upload is met by Put's ErrPackTaken and the quota read again).
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s.builtIn(id) {
		return taken("")
	}
	if k, found, err := sh.store.Find(ctx, id); err != nil {
		return s.internal("reading the uploaded corpora", err)
	} else if found {
		return taken(k.Tenant)
	}
	size := u.size()
	if aerr := s.withinQuota(ctx, tenant, 1, size); aerr != nil {
		return aerr
	}
	eng, aerr := s.verifier()
	if aerr != nil {
		return aerr
	}
	if !sh.resident {
		defer eng.Close()
	}
	if _, err := eng.LoadPack(u.files["manifest.json"], u.passages); err != nil {
		return refuse(http.StatusUnprocessableEntity, CodeInvalidPack, err.Error())
	}
	if err := eng.VerifyPack(id); err != nil {
		eng.RemovePack(id)
		return refuse(http.StatusUnprocessableEntity, CodeInvalidPack, err.Error())
	}
	k := KeptPack{Tenant: tenant, ID: id, Manifest: u.files["manifest.json"], File: u.manifest.PassagesFile, Bytes: size}
	if err := sh.store.Put(ctx, k, u.files[k.File]); err != nil {
		if sh.resident {
			eng.RemovePack(id)
		}
		if errors.Is(err, ErrPackTaken) {
			if k, found, _ := sh.store.Find(ctx, id); found {
				return taken(k.Tenant)
			}
			return taken("")
		}
		return s.internal("keeping the corpus", err)
	}
	// The quota again, this pack counted: another process's upload of the
	// token's may have been kept meanwhile (then this one goes).
	if aerr := s.withinQuota(ctx, tenant, 0, 0); aerr != nil {
		if err := sh.store.Delete(ctx, k); err != nil {
			s.log.Error("server fault", "during", "deleting an upload past the quota", "corpus", id, "error", err.Error())
		}
		if sh.resident {
			eng.RemovePack(id)
		}
		return aerr
	}
	s.log.Info("corpus uploaded", "corpus", id, "token", tenant, "bytes", size)
	w.Header().Set("Location", "/v1/corpora/"+id)
	writeJSON(w, http.StatusCreated, uploadedOf(shelved{KeptPack: k, manifest: u.manifest}))
	return nil
}

// withinQuota refuses with corpus_quota when the tenant's kept packs and
// n more taking size more bytes pass its quota.
func (s *Server) withinQuota(ctx context.Context, tenant string, n int, size int64) *apiError {
	kept, err := s.shelf.store.Kept(ctx, tenant)
	if err != nil {
		return s.internal("reading the uploaded corpora", err)
	}
	have, used := usage(kept)
	q := s.shelf.quota
	if have+n > q.Packs {
		return refuse(http.StatusConflict, CodeCorpusQuota, fmt.Sprintf("the token keeps %d corpora, its quota; delete one first", have+n-1))
	}
	if used+size > q.Bytes {
		return refuse(http.StatusConflict, CodeCorpusQuota, fmt.Sprintf("the token's corpora take %d bytes; this one's %d would pass its quota of %d", used, size, q.Bytes))
	}
	return nil
}

// verifier is the engine an upload is opened and verified in: the
// server's own when every kept pack is open in it, else one of its own
// (the caller closes it), so a Worker's front keeps no pack it verified.
func (s *Server) verifier() (*engine.Engine, *apiError) {
	if s.shelf.resident {
		eng, err := s.engine.get()
		if err != nil {
			return nil, s.internal("opening the engine", err)
		}
		return eng, nil
	}
	eng, err := engine.Open(engine.Options{})
	if err != nil {
		return nil, s.internal("opening an engine to verify the upload", err)
	}
	return eng, nil
}

// deleteCorpus deletes the token's own upload (a built-in pack cannot
// be): runs under way keep it until they end; a queued run naming it
// fails when it starts.
func (s *Server) deleteCorpus(w http.ResponseWriter, r *http.Request) *apiError {
	if err := noQuery(r); err != nil {
		return err
	}
	c, sp, aerr := s.findCorpus(r)
	if aerr != nil {
		return aerr
	}
	if sp == nil {
		return refuse(http.StatusConflict, CodeBuiltInCorpus, fmt.Sprintf("corpus %q is built into this server; only uploaded corpora are deleted", c.ID))
	}
	sh := s.shelf
	sh.mu.Lock()
	defer sh.mu.Unlock()
	ctx := r.Context()
	if k, found, err := sh.store.Find(ctx, sp.ID); err != nil {
		return s.internal("reading the uploaded corpora", err)
	} else if !found || k.Tenant != sp.Tenant {
		return noCorpus(sp.ID) // deleted meanwhile
	}
	if err := sh.store.Delete(ctx, sp.KeptPack); err != nil {
		return s.internal("deleting the corpus", err)
	}
	if sh.resident {
		eng, err := s.engine.get()
		if err == nil {
			err = eng.RemovePack(sp.ID)
		}
		if err != nil {
			s.log.Error("server fault", "during", "forgetting a deleted corpus", "error", err.Error())
		}
	}
	s.log.Info("corpus deleted", "corpus", sp.ID, "token", sp.Tenant)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// loadShelf indexes the kept packs of a directory and opens each in the
// engine (Start, natively): a kept pack that no longer reads or opens is
// logged and not served.
func (s *Server) loadShelf() error {
	if s.shelf == nil {
		return nil
	}
	d, ok := s.shelf.store.(*dirPacks)
	if !ok {
		return nil // a Worker's: its packs open when a run names them
	}
	eng, err := s.engine.get()
	if err != nil {
		return err
	}
	for _, err := range d.load() {
		s.badUpload(err)
	}
	ctx := context.Background()
	for _, k := range d.all() {
		sp, err := read(k)
		var passages []byte
		if err == nil {
			passages, err = s.shelf.passages(ctx, sp)
		}
		if err == nil && s.builtIn(sp.ID) {
			err = errors.New("its id is taken")
		}
		if err == nil {
			_, err = eng.LoadPack(sp.Manifest, passages)
		}
		if err != nil {
			s.log.Error("server fault", "during", "opening an uploaded corpus", "corpus", k.ID, "error", err.Error())
		}
	}
	return nil
}
