package server

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"

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

// parserFor reads the run requests of a tenant (a token): the server's
// built-in packs, then the tenant's own uploads by id. Another tenant's
// upload is unknown_corpus, as a pack that does not exist.
func (s *Server) parserFor(tenant string) engine.RunParser {
	p := s.runs
	if s.shelf == nil {
		return p
	}
	own := s.shelf.owned(tenant)
	if len(own) == 0 {
		return p
	}
	p.Packs = append(append([]engine.PackSummary(nil), p.Corpora()...), s.summaries(own)...)
	return p
}

// summaries are the engine's summaries of shelved packs (one the engine
// no longer holds, deleted meanwhile, is left out).
func (s *Server) summaries(own []shelved) []engine.PackSummary {
	eng, err := s.engine.get()
	if err != nil {
		return nil
	}
	var out []engine.PackSummary
	for _, sp := range own {
		if p, err := eng.Pack(sp.ID); err == nil {
			out = append(out, *p)
		}
	}
	return out
}

// listCorpora lists the packs the token's runs may name, the seed first,
// then the other built-in packs, then its own uploads: the run parser's
// own list, so what is listed is what runs.
func (s *Server) listCorpora(w http.ResponseWriter, r *http.Request) *apiError {
	if err := noQuery(r); err != nil {
		return err
	}
	out := []corpusJSON{}
	for _, p := range s.runs.Corpora() {
		out = append(out, corpusOf(p))
	}
	if s.shelf != nil {
		own := s.shelf.owned(tokenOf(r).ID)
		for i, p := range s.summaries(own) {
			out = append(out, uploadedOf(p, own[i].Bytes))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"corpora": out})
	return nil
}

func uploadedOf(p engine.PackSummary, size int64) corpusJSON {
	c := corpusOf(p)
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
		if sp, ok := s.shelf.find(tokenOf(r).ID, id); ok {
			if ps := s.summaries([]shelved{sp}); len(ps) == 1 {
				return uploadedOf(ps[0], sp.Bytes), &sp, nil
			}
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
var noShelf = refuse(http.StatusServiceUnavailable, CodeUnavailable, "this server keeps no uploaded corpora (serve-api --corpora DIR)")

// uploadCorpus reads a gzip'd tar of a pack folder's files under the
// caps, checks it (unpackUpload), opens and verifies the pack as the
// command line's --pack does, and keeps it on the shelf under the
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
	tenant := tokenOf(r).ID
	id := u.manifest.ID
	eng, err := s.engine.get()
	if err != nil {
		return s.internal("opening the engine", err)
	}
	// One upload at a time: the quota, the id and the engine's packs are
	// read and changed together.
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if _, err := eng.Pack(id); err == nil {
		if p, ok := sh.packs[id]; ok && p.Tenant == tenant {
			return refuse(http.StatusConflict, CodeCorpusExists, fmt.Sprintf("this token already has corpus %q; delete it first to replace it", id))
		}
		return refuse(http.StatusConflict, CodeCorpusExists, fmt.Sprintf("the id %q is taken on this server; give the pack another id (corpus build --id)", id))
	}
	n, used := sh.used(tenant)
	size := u.size()
	if n+1 > sh.quota.Packs {
		return refuse(http.StatusConflict, CodeCorpusQuota, fmt.Sprintf("the token keeps %d corpora, its quota; delete one first", n))
	}
	if used+size > sh.quota.Bytes {
		return refuse(http.StatusConflict, CodeCorpusQuota, fmt.Sprintf("the token's corpora take %d bytes; this one's %d would pass its quota of %d", used, size, sh.quota.Bytes))
	}
	if _, err := eng.LoadPack(u.files["manifest.json"], u.passages); err != nil {
		return refuse(http.StatusUnprocessableEntity, CodeInvalidPack, err.Error())
	}
	if err := eng.VerifyPack(id); err != nil {
		eng.RemovePack(id)
		return refuse(http.StatusUnprocessableEntity, CodeInvalidPack, err.Error())
	}
	if err := sh.write(tenant, u); err != nil {
		eng.RemovePack(id)
		return s.internal("keeping the corpus", err)
	}
	sh.packs[id] = shelved{Tenant: tenant, ID: id, Bytes: size, File: u.manifest.PassagesFile}
	p, err := eng.Pack(id)
	if err != nil {
		return s.internal("reading the corpus back", err)
	}
	s.log.Info("corpus uploaded", "corpus", id, "token", tenant, "bytes", size)
	w.Header().Set("Location", "/v1/corpora/"+id)
	writeJSON(w, http.StatusCreated, uploadedOf(*p, size))
	return nil
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
	eng, err := s.engine.get()
	if err != nil {
		return s.internal("opening the engine", err)
	}
	sh := s.shelf
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if p, ok := sh.packs[sp.ID]; !ok || p.Tenant != sp.Tenant {
		return noCorpus(sp.ID) // deleted meanwhile
	}
	if err := sh.remove(*sp); err != nil {
		return s.internal("deleting the corpus", err)
	}
	delete(sh.packs, sp.ID)
	if err := eng.RemovePack(sp.ID); err != nil {
		s.log.Error("server fault", "during", "forgetting a deleted corpus", "error", err.Error())
	}
	s.log.Info("corpus deleted", "corpus", sp.ID, "token", sp.Tenant)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// loadShelf opens every pack kept on the shelf in the engine (Start): a
// kept pack that no longer reads or opens is logged and not served.
func (s *Server) loadShelf() error {
	if s.shelf == nil {
		return nil
	}
	eng, err := s.engine.get()
	if err != nil {
		return err
	}
	kept, errs := s.shelf.load()
	for _, err := range errs {
		s.log.Error("server fault", "during", "reading an uploaded corpus", "error", err.Error())
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].ID < kept[j].ID })
	s.shelf.mu.Lock()
	defer s.shelf.mu.Unlock()
	for _, k := range kept {
		if _, err := eng.Pack(k.ID); err == nil {
			s.log.Error("server fault", "during", "opening an uploaded corpus", "corpus", k.ID, "error", "its id is taken")
			continue
		}
		if _, err := eng.LoadPack(k.manifest, k.passages); err != nil {
			s.log.Error("server fault", "during", "opening an uploaded corpus", "corpus", k.ID, "error", err.Error())
			continue
		}
		s.shelf.packs[k.ID] = k.shelved
	}
	return nil
}
