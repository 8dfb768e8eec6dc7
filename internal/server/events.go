package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ragagentlab/ragagent/internal/server/store"
)

// hub wakes the streams of a run when this process wrote an event for it.
// A stream still rereads the store every Poll, so events another process
// wrote (a second instance, a Worker isolate) arrive too.
type hub struct {
	mu    sync.Mutex
	waits map[string]*waiters
}

// waiters share the channel the run's next notify closes.
type waiters struct {
	ch chan struct{}
	n  int
}

// wait returns a channel closed at the run's next notify, and the function
// to call when no longer waiting. Take it before reading the store, so an
// event written in between is not missed.
func (h *hub) wait(id string) (<-chan struct{}, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w, ok := h.waits[id]
	if !ok {
		w = &waiters{ch: make(chan struct{})}
		h.waits[id] = w
	}
	w.n++
	return w.ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if w.n--; w.n == 0 && h.waits[id] == w {
			delete(h.waits, id)
		}
	}
}

func (h *hub) notify(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w, ok := h.waits[id]; ok {
		close(w.ch)
		delete(h.waits, id)
	}
}

// lastEventID reads Last-Event-ID: the number of the last event the client
// has, so the stream resumes after it.
func lastEventID(r *http.Request) (int64, *apiError) {
	vs := r.Header.Values("Last-Event-ID")
	if len(vs) == 0 {
		return 0, nil
	}
	v := strings.TrimSpace(vs[0])
	n, err := strconv.ParseInt(v, 10, 64)
	if len(vs) > 1 || err != nil || n < 0 || strconv.FormatInt(n, 10) != v {
		return 0, refuse(http.StatusBadRequest, CodeInvalidParameter, "Last-Event-ID must be the id of an event this stream sent (a whole number)")
	}
	return n, nil
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) *apiError {
	if err := noQuery(r); err != nil {
		return err
	}
	after, aerr := lastEventID(r)
	if aerr != nil {
		return aerr
	}
	run, aerr := s.ownRun(r)
	if aerr != nil {
		return aerr
	}
	if s.dispatch != nil && !s.dispatch.Local(run.ID) {
		// Its owner serves the stream and counts it.
		s.serveStream(w, r, run, after, true, false, false)
		return nil
	}
	release, aerr := s.acquireStream(run.TokenID)
	if aerr != nil {
		return aerr
	}
	defer release()
	s.stream(w, r, run.ID, after)
	return nil
}

// streamPage is how many events one read of the store sends.
const streamPage = 256

// stream sends a run's events after the given one as Server-Sent Events,
// each read back from the store (so only committed events are ever sent),
// until the end event. It reports whether the end event was sent; false
// means the client went away (or the server is closing) first.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, id string, after int64) bool {
	return s.streamBeating(w, r, id, after, s.heartbeat, nil)
}

// streamBeating is stream with keep-alive comments every beat, begun with
// first (the run's events after after that the caller has) where this
// process holds no log of the run, instead of a store read. What is
// written after them (by this process or another) comes as for any
// stream: a notify or the next poll.
func (s *Server) streamBeating(w http.ResponseWriter, r *http.Request, id string, after int64, every time.Duration, first []store.Event) bool {
	return s.streamOf(w, r, id, after, every, first, s.runTail)
}

// tailFunc reads a stream's events after after (limit at most) and
// whether what they belong to has finished, from one read; found is false
// when it does not exist.
type tailFunc func(ctx context.Context, id string, after int64, limit int) (events []store.Event, finished, found bool, err error)

// runTail is a run's tail: its events and whether it left the queued and
// running states.
func (s *Server) runTail(ctx context.Context, id string, after int64, limit int) ([]store.Event, bool, bool, error) {
	status, evs, found, err := s.store.Tail(ctx, id, after, limit)
	return evs, status != store.Queued && status != store.Running, found, err
}

// streamOf is streamBeating over any event log that ends with an end
// event: a run's or an experiment's, read by tail.
func (s *Server) streamOf(w http.ResponseWriter, r *http.Request, id string, after int64, every time.Duration, first []store.Event, tail tailFunc) bool {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	flush := func() bool { return rc.Flush() == nil }
	if !flush() {
		return false
	}
	ctx := r.Context()
	beat := time.NewTicker(every)
	defer beat.Stop()
	poll := time.NewTimer(s.poll)
	defer poll.Stop()
	for {
		woken, release := s.hub.wait(id)
		more, done, ok := s.sendEvents(w, flush, r, id, &after, first, tail)
		first = nil
		if done || !ok {
			release()
			return done && ok
		}
		if more {
			release()
			continue
		}
		poll.Reset(s.poll)
		select {
		case <-woken:
		case <-poll.C:
		case <-beat.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || !flush() {
				ok = false
			}
		case <-ctx.Done():
			ok = false
		}
		release()
		if !ok {
			return false
		}
	}
}

// sendEvents sends the events after *after that the store has (a page at
// most): more when a full page went, done when the end event went, ok
// false when the client is gone.
func (s *Server) sendEvents(w http.ResponseWriter, flush func() bool, r *http.Request, id string, after *int64, first []store.Event, tail tailFunc) (more, done, ok bool) {
	ctx := r.Context()
	fail := func(what string, err error) (bool, bool, bool) {
		if ctx.Err() == nil {
			s.log.Error("server fault", "during", what, "run", id, "error", err.Error())
		}
		return false, false, false
	}
	// The run's status comes from the same read as its events: the end
	// event commits with the finish, so a run finished in that read has
	// every event in it (two reads, status then events, would do too; the
	// other way round, a finish between them would end the stream without
	// its end event).
	evs, finished, held := s.logs.after(id, *after, streamPage)
	switch {
	case held:
	case len(first) > 0:
		// A streamed POST's: the front's admission stored these; the run
		// is queued or running (its end would be among them).
		evs, finished = first, first[len(first)-1].Type == EventEnd
	default:
		stored, ended, found, err := tail(ctx, id, *after, streamPage)
		if err != nil || !found {
			return fail("reading events", errors.Join(err, errors.New("the run is gone")))
		}
		evs, finished = stored, ended
	}
	// The events read together go in one write: on a Worker each write to
	// a response is a chunk that crosses from the run's object to the
	// front and out (a turn of the object's program, one of the stream's
	// reader, and, under wrangler dev, its DevTools events), and a
	// scripted run's steps and end are stored together. Natively the
	// response is buffered either way.
	var out bytes.Buffer
	end := false
	for _, e := range evs {
		fmt.Fprintf(&out, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, e.Data)
		*after = e.Seq
		if e.Type == EventEnd {
			end = true
			break
		}
	}
	if out.Len() > 0 {
		if _, err := w.Write(out.Bytes()); err != nil || !flush() {
			return false, false, false
		}
	}
	if end {
		return false, true, true
	}
	if len(evs) < streamPage && finished {
		// A client resuming after the end event: nothing is left to send.
		return false, true, true
	}
	return len(evs) == streamPage, false, true
}
