package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/internal/server/store"
)

// links are a run's URLs.
type links struct {
	Self      string `json:"self"`
	Events    string `json:"events"`
	Cancel    string `json:"cancel"`
	Recording string `json:"recording"`
}

func linksOf(id string) links {
	base := "/v1/runs/" + id
	return links{Self: base, Events: base + "/events", Cancel: base + "/cancel", Recording: base + "/recording"}
}

// runSummary is a run in a list (api: RunSummary).
type runSummary struct {
	ID            string          `json:"id"`
	Status        string          `json:"status"`
	Reason        *string         `json:"reason"`
	QueuePosition *int            `json:"queue_position"`
	Request       json.RawMessage `json:"request"`
	CreatedAt     string          `json:"created_at"`
	StartedAt     *string         `json:"started_at"`
	FinishedAt    *string         `json:"finished_at"`
	Links         links           `json:"links"`
}

// runJSON is a run (api: Run): the summary, and once finished its trial
// report, or the fault that ended it.
type runJSON struct {
	runSummary
	Report json.RawMessage `json:"report"`
	Error  json.RawMessage `json:"error"`
}

func timeOrNil(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

func summaryOf(r store.Run) runSummary {
	s := runSummary{ID: r.ID, Status: r.Status, Request: json.RawMessage(r.Spec),
		CreatedAt: r.CreatedAt.UTC().Format(time.RFC3339Nano), StartedAt: timeOrNil(r.StartedAt),
		FinishedAt: timeOrNil(r.FinishedAt), Links: linksOf(r.ID)}
	if r.Reason != "" {
		s.Reason = &r.Reason
	}
	if r.Status == store.Queued {
		p := r.Position
		s.QueuePosition = &p
	}
	return s
}

func rawOrNull(s string) json.RawMessage {
	if s == "" {
		return json.RawMessage("null")
	}
	return json.RawMessage(s)
}

func runOf(r store.Run) runJSON {
	return runJSON{runSummary: summaryOf(r), Report: rawOrNull(r.Report), Error: rawOrNull(r.Error)}
}

// noQuery refuses a query string on a resource that takes none.
func noQuery(r *http.Request) *apiError {
	for k := range r.URL.Query() {
		return refuse(http.StatusBadRequest, CodeUnknownParameter, fmt.Sprintf("unknown parameter %q", k))
	}
	return nil
}

// createRun checks the body, the policy's scope and the key, then admits
// the run: 202 with the run, or its event stream when asked.
func (s *Server) createRun(w http.ResponseWriter, r *http.Request) *apiError {
	if err := noQuery(r); err != nil {
		return err
	}
	if s.isClosing() {
		return refuse(http.StatusServiceUnavailable, CodeUnavailable, "the server is shutting down")
	}
	data, aerr := readBody(w, r)
	if aerr != nil {
		return aerr
	}
	o, aerr := decodeObject(data)
	if aerr != nil {
		return aerr
	}
	t := tokenOf(r)
	ctx := r.Context()
	runs, err := s.parserFor(ctx, t.ID, corpusNamed(o))
	if err != nil {
		return s.internal("reading the token's corpora", err)
	}
	spec, aerr := parseSpec(o, runs)
	if aerr != nil {
		return aerr
	}
	if spec.Run.Policy == engine.Gemini && !hasScope(t, ScopeLive) {
		return missingScope(ScopeLive)
	}
	if spec.Run.Policy == engine.Scripted && !hasScope(t, ScopeRun) {
		return missingScope(ScopeRun)
	}
	if spec.Stream && !hasScope(t, ScopeRead) {
		return refuse(http.StatusForbidden, CodeMissingScope, "a streamed run shows its events: the token needs the read scope")
	}
	if spec.Run.Policy == engine.Gemini {
		if s.transport == nil || !s.transport.HasKey() {
			return refuse(http.StatusServiceUnavailable, reason.MissingAPIKey, "the server has no Gemini API key; nothing was sent")
		}
		now := s.clock()
		u, err := s.store.Usage(ctx, t.ID, day(now))
		if err != nil {
			return s.internal("reading the allowance", err)
		}
		if u.LiveCalls >= t.DailyLiveCalls {
			e := refuse(http.StatusTooManyRequests, reason.BatchRequestLimit,
				fmt.Sprintf("the token's %d live model calls for today (UTC) are used; nothing was sent", t.DailyLiveCalls))
			e.retryAfter = untilTomorrow(now)
			return e
		}
	}
	if spec.Stream {
		// The stream's slot is taken before the run is admitted: a
		// refused stream admits nothing.
		release, aerr := s.acquireStream(t.ID)
		if aerr != nil {
			return aerr
		}
		defer release()
	}
	id, err := randomHex(10)
	if err != nil {
		return s.internal("naming the run", err)
	}
	run, err := s.runner.admit(ctx, store.NewRun{ID: "run_" + id, TokenID: t.ID, Spec: spec.JSON(), At: s.clock()}, spec.Strategy == "enqueue")
	switch {
	case errors.Is(err, store.ErrAtCapacity):
		e := refuse(http.StatusTooManyRequests, CodeAtCapacity, fmt.Sprintf(
			"the cap on running runs is reached (%d in all, %d per token); retry later or send strategy \"enqueue\"", s.caps.Running, s.caps.RunningPerToken))
		e.retryAfter = 1
		return e
	case errors.Is(err, store.ErrRevoked):
		return unauthorized
	case errors.Is(err, store.ErrQueueFull):
		e := refuse(http.StatusTooManyRequests, CodeQueueFull, fmt.Sprintf(
			"the queue is full (%d in all, %d per token); retry later", s.caps.Queue, s.caps.QueuePerToken))
		e.retryAfter = 1
		return e
	case err != nil:
		return s.internal("admitting the run", err)
	}
	if spec.Stream {
		w.Header().Set("Content-Location", linksOf(run.ID).Self)
		completed, here := s.serveStream(w, r, run, 0, false, spec.OnDisconnect == "cancel", true)
		if here && !completed && spec.OnDisconnect == "cancel" {
			s.log.Info("stream client gone; cancelling as asked", "run", run.ID)
			s.cancelRun(t.ID, run)
		}
		return nil
	}
	w.Header().Set("Location", linksOf(run.ID).Self)
	writeJSON(w, http.StatusAccepted, runOf(run))
	return nil
}

// ownRun finds the token's run named in the path; another token's run is
// not found, exactly like a run that does not exist.
func (s *Server) ownRun(r *http.Request) (store.Run, *apiError) {
	id := r.PathValue("id")
	run, found, err := s.store.Run(r.Context(), id)
	if err != nil {
		return store.Run{}, s.internal("reading the run", err)
	}
	if !found || run.TokenID != tokenOf(r).ID {
		return store.Run{}, refuse(http.StatusNotFound, CodeNotFound, fmt.Sprintf("no run %q among this token's runs", id))
	}
	return run, nil
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) *apiError {
	if err := noQuery(r); err != nil {
		return err
	}
	run, aerr := s.ownRun(r)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, runOf(run))
	return nil
}

// pageOf reads a list's limit (1..100, default 20) and cursor (the last
// listed item's sequence number; 0 when absent), refusing any other
// parameter.
func pageOf(r *http.Request) (limit int, before int64, aerr *apiError) {
	q := r.URL.Query()
	limit, before = 20, 0
	for k, vs := range q {
		if k != "limit" && k != "cursor" {
			return 0, 0, refuse(http.StatusBadRequest, CodeUnknownParameter, fmt.Sprintf("unknown parameter %q (limit, cursor)", k))
		}
		if len(vs) != 1 {
			return 0, 0, refuse(http.StatusBadRequest, CodeInvalidParameter, fmt.Sprintf("%s is given %d times", k, len(vs)))
		}
	}
	if v, ok := q["limit"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > 100 || strconv.Itoa(n) != v[0] {
			return 0, 0, refuse(http.StatusBadRequest, CodeInvalidParameter, "limit must be a whole number from 1 to 100")
		}
		limit = n
	}
	if v, ok := q["cursor"]; ok {
		n, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil || n < 1 || strconv.FormatInt(n, 10) != v[0] {
			return 0, 0, refuse(http.StatusBadRequest, CodeInvalidParameter, "cursor is not one this server gave")
		}
		before = n
	}
	return limit, before, nil
}

// listRuns pages through the token's runs, newest first. The cursor is
// the last run's sequence number (opaque to clients).
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) *apiError {
	limit, before, aerr := pageOf(r)
	if aerr != nil {
		return aerr
	}
	runs, err := s.store.Runs(r.Context(), tokenOf(r).ID, before, limit+1)
	if err != nil {
		return s.internal("listing runs", err)
	}
	out := struct {
		Runs       []runSummary `json:"runs"`
		NextCursor *string      `json:"next_cursor"`
	}{Runs: []runSummary{}}
	for i, run := range runs {
		if i == limit {
			next := strconv.FormatInt(runs[i-1].Seq, 10)
			out.NextCursor = &next
			break
		}
		out.Runs = append(out.Runs, summaryOf(run))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// cancel drops a queued run or stops a running one, then answers with the
// run once it has ended (202 if it has not within CancelWait).
func (s *Server) cancel(w http.ResponseWriter, r *http.Request) *apiError {
	if err := noQuery(r); err != nil {
		return err
	}
	run, aerr := s.ownRun(r)
	if aerr != nil {
		return aerr
	}
	if run.Status != store.Queued && run.Status != store.Running {
		return refuse(http.StatusConflict, CodeAlreadyFinished, fmt.Sprintf("the run already finished (%s, %s)", run.Status, run.Reason))
	}
	done, err := s.cancelRun(tokenOf(r).ID, run)
	if err != nil {
		return s.internal("cancelling the run", err)
	}
	wait, stop := context.WithTimeout(r.Context(), s.cancelWait)
	defer stop()
	switch {
	case done == nil && s.dispatch != nil:
		// Its owner runs it: the cancel reaches it as a call.
		done = s.remoteCancel(wait, run.ID)
	case done == nil:
		// Another process runs it: it reads the request at its next poll;
		// wait for the run's end in the store.
		done = s.ended(wait, run.ID)
	}
	select {
	case <-done:
	case <-wait.Done():
		if r.Context().Err() != nil {
			return nil
		}
	}
	run, found, err := s.store.Run(r.Context(), run.ID)
	if err != nil || !found {
		return s.internal("reading the run", errors.Join(err, errors.New("the run is gone")))
	}
	status := http.StatusOK
	if run.Status == store.Queued || run.Status == store.Running {
		status = http.StatusAccepted
	}
	writeJSON(w, status, runOf(run))
	return nil
}

// ended closes when the store shows the run finished (it reads every
// Poll, and when this process writes one of the run's events), or when ctx
// ends.
func (s *Server) ended(ctx context.Context, id string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(s.poll)
		defer t.Stop()
		for {
			woken, release := s.hub.wait(id)
			r, found, err := s.store.Run(ctx, id)
			if err != nil || !found || (r.Status != store.Queued && r.Status != store.Running) {
				release()
				close(done)
				return
			}
			select {
			case <-woken:
			case <-t.C:
			case <-ctx.Done():
				release()
				return
			}
			release()
		}
	}()
	return done
}

// cancelRun drops the run if it is still queued; else it leaves a cancel
// request in the store (for whichever process runs it) and stops it if
// this process runs it. The channel closes when the run has ended (at once
// for a dropped one); it is nil when another process runs it.
func (s *Server) cancelRun(tokenID string, run store.Run) (<-chan struct{}, error) {
	if run.Status == store.Queued {
		_, dropped, err := s.store.CancelQueued(context.Background(), tokenID, run.ID, s.clock(), s.endEvent)
		if err != nil {
			return nil, err
		}
		if dropped {
			s.hub.notify(run.ID)
			closed := make(chan struct{})
			close(closed)
			return closed, nil
		}
		// It left the queue meanwhile: it runs now.
	}
	if _, err := s.store.RequestCancel(context.Background(), run.ID, s.clock()); err != nil {
		return nil, err
	}
	return s.runner.cancel(run.ID), nil
}

func (s *Server) recording(w http.ResponseWriter, r *http.Request) *apiError {
	if err := noQuery(r); err != nil {
		return err
	}
	run, aerr := s.ownRun(r)
	if aerr != nil {
		return aerr
	}
	data, found, err := s.store.Recording(r.Context(), run.ID)
	if err != nil {
		return s.internal("reading the recording", err)
	}
	if !found {
		msg := "this run has no recording: a scripted run sends nothing to record"
		if spec, err := specOf(run.Spec, s.specParser(r.Context(), run.TokenID)); err == nil && spec.Run.Policy == engine.Gemini {
			msg = "this run has no recording yet: it has sent nothing"
		}
		return refuse(http.StatusNotFound, CodeNoRecording, msg)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", url.PathEscape(run.ID)+".recording.json"))
	w.WriteHeader(http.StatusOK)
	w.Write(data)
	return nil
}
