package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/internal/server/store"
)

// Dispatch hands runs to where they execute when that is not this
// process. A Worker's front program (one per isolate, whose requests end
// with their responses) hands each run to the Durable Object that owns it:
// the object executes it past any request's end, serves its event streams
// and takes its cancel as a call. Nil, the native server's case, executes
// every run in this process.
type Dispatch interface {
	// Local reports whether this process executes the run.
	Local(id string) bool
	// Start has the run's owner execute run (as admitted or promoted:
	// the store shows it running), sent whole so that the owner need not
	// read it back.
	Start(ctx context.Context, run store.Run) error
	// Cancel asks the run's owner to stop it, returning once it has ended
	// (or ctx has).
	Cancel(ctx context.Context, id string) error
	// Stream has the run's owner serve the stream q asks for to w.
	Stream(w http.ResponseWriter, r *http.Request, q StreamRequest)
	// Experiment tells the experiment's owner that it runs (the store
	// shows it running): the owner runs it in pieces from then on
	// (RunnerHandler's POST /runner/experiments).
	Experiment(ctx context.Context, id string) error
	// Plan has the experiment's owner check it by the engine's plan
	// before it is admitted (spec: the request as the store keeps it;
	// tenant: the token whose upload it may name; RunnerHandler's POST
	// /runner/plan): status and body are the owner's answer, 200
	// {"total", "k"} or the refusal as the API writes it.
	Plan(ctx context.Context, id, tenant string, spec []byte) (status int, body []byte, err error)
}

// StreamRequest is a stream a front asks a run's owner to serve: the
// run's events after After, counted among TokenID's open streams when
// Capped (an event stream, not a streamed POST, whose slot was taken
// before its admission); Cancel: the owner cancels the run if the client
// goes away before the end event. First are the run's events from
// After on that the front already has (a streamed POST's: the one its
// admission stored), which the owner sends instead of reading them.
// Experiment: the stream is an experiment's, not a run's.
type StreamRequest struct {
	ID, TokenID    string
	After          int64
	Capped, Cancel bool
	First          []store.Event
	Experiment     bool
}

// Path is the owner's path for the stream: RunnerHandler's GET
// /runner/events with q in its query.
func (q StreamRequest) Path() string {
	v := url.Values{"id": {q.ID}, "token": {q.TokenID}, "after": {strconv.FormatInt(q.After, 10)}}
	if q.Capped {
		v.Set("capped", "1")
	}
	if q.Cancel {
		v.Set("cancel", "1")
	}
	if q.Experiment {
		v.Set("experiment", "1")
	}
	if len(q.First) > 0 {
		first := make([]firstEvent, len(q.First))
		for i, e := range q.First {
			first[i] = firstEvent{e.Seq, e.Type, e.Data}
		}
		data, _ := json.Marshal(first) // numbers and strings: always encodes
		v.Set("first", string(data))
	}
	return "/runner/events?" + v.Encode()
}

// firstEvent is an event of StreamRequest.First in the owner's query:
// what a stream sends of it.
type firstEvent struct {
	Seq  int64  `json:"seq"`
	Type string `json:"type"`
	Data string `json:"data"`
}

// firstEvents reads the first= of a stream's query: events after after,
// numbered in order, each with a type (none when the query has none).
func firstEvents(id, text string, after int64) ([]store.Event, error) {
	if text == "" {
		return nil, nil
	}
	var first []firstEvent
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&first); err != nil {
		return nil, fmt.Errorf("first: %w", err)
	}
	out := make([]store.Event, len(first))
	for i, e := range first {
		if e.Seq <= after || e.Type == "" {
			return nil, fmt.Errorf("first: event %d is not an event after %d", i+1, after)
		}
		after = e.Seq
		out[i] = store.Event{RunID: id, Seq: e.Seq, Type: e.Type, Data: e.Data}
	}
	return out, nil
}

// start executes a run the store shows running, here or at its owner,
// its event log begun with evs when the store read them (else read when
// it is opened). A run its owner could not be given ends failed at once,
// not left running with nobody to run it.
func (rn *runner) start(run store.Run, evs []store.Event) {
	d := rn.s.dispatch
	if d == nil || d.Local(run.ID) {
		var first *[]store.Event
		if evs != nil {
			first = &evs
		}
		rn.launch(run, first)
		return
	}
	rn.s.hub.notify(run.ID)
	if err := d.Start(context.Background(), run); err != nil {
		s := rn.s
		s.log.Error("server fault", "during", "handing a run to its runner", "run", run.ID, "error", err.Error())
		body, _ := marshal(errorBody{CodeInternal, "the server failed while handing the run to its runner"})
		o := store.Outcome{Status: store.Failed, Reason: string(CodeInternal), Error: string(body), At: s.clock()}
		if _, _, err := s.store.Finish(context.Background(), run.ID, o, s.endEvent); err != nil {
			s.log.Error("server fault", "during", "finishing a run", "run", run.ID, "error", err.Error())
		}
		s.hub.notify(run.ID)
	}
}

// serveStream streams a run's events here, or has its owner stream them;
// completed is false when the client went away before the end event here.
// admitted: the run was just admitted (a streamed POST), so its first
// event is its admission's, which a remote owner is sent and sends
// without reading it (made only then: a stream served here reads it).
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request, run store.Run, after int64, capped, cancel, admitted bool) (completed, here bool) {
	if s.dispatch != nil && !s.dispatch.Local(run.ID) {
		q := StreamRequest{ID: run.ID, TokenID: run.TokenID, After: after, Capped: capped, Cancel: cancel}
		if admitted {
			q.First = s.admitted(run)
		}
		s.dispatch.Stream(w, r, q)
		return true, false
	}
	return s.stream(w, r, run.ID, after), true
}

// remoteCancel is closed once the run's owner has stopped it (or ctx
// ended).
func (s *Server) remoteCancel(ctx context.Context, id string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.dispatch.Cancel(ctx, id); err != nil && ctx.Err() == nil {
			s.log.Error("server fault", "during", "asking a run's runner to cancel it", "run", id, "error", err.Error())
		}
	}()
	return done
}

// RunnerHandler is what a run's owner serves to the front (a Worker's
// Durable Object, reachable only through its namespace's stubs, never
// from the Internet): the calls a Dispatch makes. The front has
// authenticated the request and checked that the run is the token's.
//
//	POST /runner/start?id=      execute the run (it is running in the store; the body is the run, as JSON)
//	POST /runner/cancel?id=     stop it; answers once it has ended
//	GET  /runner/events?id=&after=&token=&capped=&cancel=&first=&stream=&experiment=   its event stream (StreamRequest.Path; an experiment's with experiment=1)
//	POST /runner/gone?stream=   the client of that stream has gone
//	POST /runner/recover        end the runs lost with an evicted object, start queued ones
//	POST /runner/plan?id=&token=   check an experiment by the engine's plan (the body its spec; token its tenant); {"total", "k"} or the refusal
//	POST /runner/experiments    start queued experiments (handing them to their owners); {"running": n}, the running ones this object owns
//	POST /runner/experiments/piece   a round of pieces (ExperimentPiece) of those; {"running": n} still running after it, {"kept": k} units kept
//
// A stream named by stream= ends when /runner/gone names it, as a native
// stream ends when its client's connection closes (and with cancel=1 its
// run is cancelled, on_disconnect "cancel"): a Worker's run object learns
// that the client of a stream went from the cancel of the ReadableStream
// worker.mjs serves it through, not from the request (worker/runner.go).
//
// worker.mjs answers POST /runner/wake itself, without this handler: it
// sets the object's alarm when a front starts.
func (s *Server) RunnerHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /runner/start", func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		var run store.Run
		if err := json.NewDecoder(r.Body).Decode(&run); err != nil || run.ID != id {
			refuse(http.StatusBadRequest, CodeMalformedRequest, "the body is not the run to start").write(w)
			return
		}
		// One read for the run's status and its events so far (the
		// stream's log): a run cancelled before its start arrived has
		// ended, and there is nothing to do.
		status, evs, found, err := s.store.Tail(r.Context(), id, 0, streamPage)
		if err != nil {
			s.internal("reading the run", err).write(w)
			return
		}
		if found && status == store.Running && !s.runner.holds(id) {
			s.runner.launch(run, &evs)
		}
		writeJSON(w, http.StatusOK, map[string]bool{"running": s.runner.holds(id)})
	})
	mux.HandleFunc("POST /runner/cancel", func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		done := s.runner.cancel(id)
		if done == nil {
			// Not held here: its start has not arrived (it will find the
			// run ended) or its object was evicted. It ends cancelled.
			o := store.Outcome{Status: store.Incomplete, Reason: string(reason.Cancelled), At: s.clock()}
			if _, _, err := s.store.Finish(r.Context(), id, o, s.endEvent); err != nil {
				s.internal("ending the run", err).write(w)
				return
			}
			s.hub.notify(id)
			writeJSON(w, http.StatusOK, map[string]bool{"ended": true})
			return
		}
		wait, stop := context.WithTimeout(r.Context(), s.cancelWait)
		defer stop()
		select {
		case <-done:
		case <-wait.Done():
		}
		writeJSON(w, http.StatusOK, map[string]bool{"ended": wait.Err() == nil})
	})
	mux.HandleFunc("GET /runner/events", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		id, token := q.Get("id"), q.Get("token")
		if key := q.Get("stream"); key != "" {
			ctx, stop := context.WithCancel(r.Context())
			defer stop()
			if !s.relayed.add(key, stop) {
				refuse(http.StatusConflict, CodeMalformedRequest, "a stream of that name is open").write(w)
				return
			}
			defer s.relayed.remove(key)
			r = r.WithContext(ctx)
		}
		after, _ := strconv.ParseInt(q.Get("after"), 10, 64)
		first, err := firstEvents(id, q.Get("first"), after)
		if err != nil {
			refuse(http.StatusBadRequest, CodeMalformedRequest, err.Error()).write(w)
			return
		}
		if q.Get("capped") == "1" {
			release, aerr := s.acquireStream(token)
			if aerr != nil {
				aerr.write(w)
				return
			}
			defer release()
		}
		if q.Get("experiment") == "1" {
			s.streamOf(w, r, id, after, s.heartbeat, nil, s.experimentTail)
			return
		}
		beat := s.heartbeat
		if q.Get("cancel") == "1" {
			beat = s.goneBeat
		}
		if completed := s.streamBeating(w, r, id, after, beat, first); !completed && q.Get("cancel") == "1" {
			s.log.Info("stream client gone; cancelling as asked", "run", id)
			if run, found, err := s.store.Run(context.Background(), id); err == nil && found {
				s.cancelRun(token, run)
			}
		}
	})
	mux.HandleFunc("POST /runner/gone", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"open": s.relayed.end(r.URL.Query().Get("stream"))})
	})
	mux.HandleFunc("POST /runner/recover", func(w http.ResponseWriter, r *http.Request) {
		got, err := s.Recover(r.Context())
		if err != nil {
			s.internal("recovering runs", err).write(w)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]int{"held": got.Held, "queued": got.Queued, "grace": got.InGrace})
	})
	mux.HandleFunc("POST /runner/plan", s.planAtOwner)
	mux.HandleFunc("POST /runner/experiments", func(w http.ResponseWriter, r *http.Request) {
		xs := &s.experiments
		if xs.st == nil || !xs.pieces {
			writeJSON(w, http.StatusOK, map[string]int{"running": 0})
			return
		}
		xs.startQueued()
		mine, err := xs.owned(r.Context())
		if err != nil {
			s.internal("listing the running experiments", err).write(w)
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"running": len(mine)})
	})
	mux.HandleFunc("POST /runner/experiments/piece", func(w http.ResponseWriter, r *http.Request) {
		xs := &s.experiments
		if xs.st == nil || !xs.pieces {
			writeJSON(w, http.StatusOK, map[string]int{"running": 0, "kept": 0})
			return
		}
		left, kept, err := xs.runPieces(r.Context())
		if err != nil {
			s.internal("running the experiments' pieces", err).write(w)
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"running": left, "kept": kept})
	})
	return mux
}

// RecoverGrace is how long a run may show running in the store before its
// owner holds it: the front hands a run over right after admitting it.
const RecoverGrace = 10 * time.Second

// Recover is what a Worker's run object does when its alarm fires: the
// runs it owns that the store shows running but it does not hold (lost
// with an evicted object, or never handed over) end incomplete,
// interrupted, and queued runs start as the caps allow. While any count
// of what it says is not zero the object keeps an alarm set.
func (s *Server) Recover(ctx context.Context) (Recovered, error) {
	var got Recovered
	running, err := s.store.Running(ctx)
	if err != nil {
		return got, err
	}
	now := s.clock()
	for _, run := range running {
		if (s.dispatch != nil && !s.dispatch.Local(run.ID)) || s.runner.holds(run.ID) {
			continue
		}
		if now.Sub(run.StartedAt) < RecoverGrace {
			got.InGrace++
			continue
		}
		o := store.Outcome{Status: store.Incomplete, Reason: string(reason.Interrupted), At: now}
		if _, ok, err := s.store.Finish(ctx, run.ID, o, s.endEvent); err != nil {
			return got, err
		} else if ok {
			s.log.Info("run interrupted: its runner lost it", "run", run.ID)
			s.hub.notify(run.ID)
		}
	}
	s.runner.promote()
	c, err := s.store.Counts(ctx)
	if err != nil {
		return got, err
	}
	got.Held, got.Queued = s.runner.count(), c.Queued
	return got, nil
}

// Recovered is what Recover found: the runs the object holds, the runs
// waiting in the queue, and the runs it owns that the store shows running
// without its holding them, started less than RecoverGrace ago (their
// start may be on its way; if it is not, only a later alarm ends them:
// an object evicted right after a run's start wakes in a fresh one whose
// alarm finds it in its grace, holding nothing and nothing queued).
type Recovered struct {
	Held, Queued, InGrace int
}

// relayedStreams are the open streams a runner serves under a name
// (RunnerHandler's stream=), each with the function that ends it.
type relayedStreams struct {
	mu   sync.Mutex
	open map[string]context.CancelFunc
}

// add names an open stream; false if the name is taken.
func (r *relayedStreams) add(key string, stop context.CancelFunc) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, taken := r.open[key]; taken {
		return false
	}
	if r.open == nil {
		r.open = map[string]context.CancelFunc{}
	}
	r.open[key] = stop
	return true
}

func (r *relayedStreams) remove(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.open, key)
}

// end ends the stream of that name: whether it was open.
func (r *relayedStreams) end(key string) bool {
	r.mu.Lock()
	stop, ok := r.open[key]
	r.mu.Unlock()
	if ok {
		stop()
	}
	return ok
}
