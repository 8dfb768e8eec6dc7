package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/ragagentlab/ragagent/core/agent"
	"github.com/ragagentlab/ragagent/core/engine"
	"github.com/ragagentlab/ragagent/core/gemini"
	"github.com/ragagentlab/ragagent/core/reason"
	"github.com/ragagentlab/ragagent/internal/server/store"
)

// Event types, in the order a run has them: queued (if it waited), started,
// one step per step, end.
const (
	EventQueued  = "queued"
	EventStarted = "started"
	EventStep    = "step"
	EventEnd     = "end"
)

// runner runs the runs this process admitted or took from the queue, each
// on its own goroutine under a context that cancel ends.
type runner struct {
	s      *Server
	mu     sync.Mutex
	active map[string]*active
	wg     sync.WaitGroup
	// promoting: a promotion loop is under way; again: another was asked
	// for meanwhile (one loop at a time: concurrent ones only contend for
	// the same queue head, which D1's retried Promote gave up on).
	promoting, again bool
}

// active is a run in progress in this process.
type active struct {
	stop context.CancelFunc
	done chan struct{}
}

// admit stores the run (running or queued) and starts it if it runs.
func (rn *runner) admit(ctx context.Context, n store.NewRun, enqueue bool) (store.Run, error) {
	run, err := rn.s.store.Admit(ctx, n, rn.s.caps, enqueue, rn.s.admittedEvent)
	if err != nil {
		return run, err
	}
	if run.Status == store.Running {
		rn.start(run, nil)
	}
	return run, nil
}

// promote starts queued runs while the caps allow, one loop at a time in
// the process (a request made during a loop runs it again after).
func (rn *runner) promote() {
	rn.mu.Lock()
	if rn.promoting {
		rn.again = true
		rn.mu.Unlock()
		return
	}
	rn.promoting = true
	rn.mu.Unlock()
	for {
		rn.promoteQueued()
		rn.mu.Lock()
		if !rn.again {
			rn.promoting = false
			rn.mu.Unlock()
			return
		}
		rn.again = false
		rn.mu.Unlock()
	}
}

func (rn *runner) promoteQueued() {
	for !rn.s.isClosing() {
		run, evs, ok, err := rn.s.store.Promote(context.Background(), rn.s.caps, rn.s.clock(), rn.s.startedEvent, streamPage)
		if err != nil {
			rn.s.log.Error("server fault", "during", "starting a queued run", "error", err.Error())
			return
		}
		if !ok {
			return
		}
		// start wakes the run's streams (here once its log is open: a
		// stream woken before would read the store for what the log has).
		rn.start(run, evs)
	}
}

// holds reports whether this process runs the run now.
func (rn *runner) holds(id string) bool {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	_, ok := rn.active[id]
	return ok
}

// count is how many runs this process runs now.
func (rn *runner) count() int {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return len(rn.active)
}

// cancel stops a run of this process; the channel closes when it has
// ended. It is nil for a run this process does not run.
func (rn *runner) cancel(id string) <-chan struct{} {
	rn.mu.Lock()
	a, ok := rn.active[id]
	rn.mu.Unlock()
	if !ok {
		return nil
	}
	a.stop()
	return a.done
}

// wait blocks until every run of this process has ended or ctx ends.
func (rn *runner) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { rn.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// launch runs a run the store shows running: the engine's Run with the
// run's task and policy, each step appended as an event before anyone can
// see it, a Gemini run's recording saved after every attempt and each of
// its attempts charged to the token before it is sent; then the run is
// finished with its end event, and the freed slot goes to the queue.
//
// first, when not nil, is the run's events so far (read by the caller),
// else they are read for the stream's log.
func (rn *runner) launch(run store.Run, first *[]store.Event) {
	ctx, stop := context.WithCancel(context.Background())
	a := &active{stop: stop, done: make(chan struct{})}
	rn.mu.Lock()
	rn.active[run.ID] = a
	rn.mu.Unlock()
	rn.wg.Add(1)
	rn.s.goRun(func() {
		defer rn.wg.Done()
		defer close(a.done)
		defer stop()
		watched := make(chan struct{})
		go rn.watch(ctx, run.ID, stop, watched)
		s := rn.s
		s.logs.open(ctx, s.store, run.ID, first)
		s.hub.notify(run.ID)
		steps := &stepWriter{s: s, id: run.ID}
		if s.logs.on {
			steps.delay = stepFlush
		}
		o := rn.revokedOutcome(run, rn.execute(ctx, run, steps))
		stop()
		<-watched
		// The steps still held are stored with the end, in one write.
		var end store.NewEvent
		evs, _, ok, err := s.store.FinishHeld(context.Background(), run, steps.take(), o, func(r store.Run) store.NewEvent {
			end = s.endEvent(r)
			return end
		})
		for _, ev := range evs {
			s.logs.add(run.ID, ev)
		}
		if err != nil {
			s.logs.drop(run.ID)
			s.log.Error("server fault", "during", "finishing a run", "run", run.ID, "error", err.Error())
		} else if ok {
			s.logs.finish(run.ID, end)
			s.log.Info("run finished", "run", run.ID, "status", o.Status, "reason", o.Reason)
		} else {
			// Another writer ended it: the store has its end, not this log.
			s.logs.drop(run.ID)
		}
		rn.mu.Lock()
		delete(rn.active, run.ID)
		rn.mu.Unlock()
		s.hub.notify(run.ID)
		rn.promote()
	})
}

// watch stops a run when the store has a cancel request for it, which a
// cancel handled by another process (a Worker isolate) leaves there: it
// reads the store every Poll until the run's context ends.
func (rn *runner) watch(ctx context.Context, id string, stop context.CancelFunc, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(rn.s.poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if asked, err := rn.s.store.CancelRequested(ctx, id); err == nil && asked {
			rn.s.log.Info("cancel requested through the store", "run", id)
			stop()
			return
		}
	}
}

// execute makes the run and says how it ended.
func (rn *runner) execute(ctx context.Context, run store.Run, steps *stepWriter) store.Outcome {
	s := rn.s
	fault := func(what string, err error) store.Outcome {
		s.log.Error("server fault", "during", what, "run", run.ID, "error", err.Error())
		body, _ := marshal(errorBody{CodeInternal, "the server failed while " + what})
		return store.Outcome{Status: store.Failed, Reason: string(CodeInternal), Error: string(body), At: s.clock()}
	}
	spec, err := specOf(run.Spec, s.specParser(ctx, run.TokenID))
	if err != nil {
		return fault("reading the run's request", err)
	}
	eng, err := s.engine.get()
	if err != nil {
		return fault("opening the engine", err)
	}
	if err := s.openUpload(ctx, run.TokenID, spec.Run.Corpus); err != nil {
		return fault("opening the uploaded corpus", err)
	}
	req := spec.Run
	req.OnStep = func(st agent.Step, obs *agent.Observation) {
		data, err := marshal(stepEvent{RunID: run.ID, Step: st, Observation: obs})
		if err != nil {
			s.log.Error("server fault", "during", "saving a step event", "run", run.ID, "error", err.Error())
			return
		}
		steps.add(store.NewEvent{Type: EventStep, Data: string(data), At: s.clock()})
	}
	if spec.Run.Policy == engine.Gemini {
		t, found, err := s.store.Token(context.Background(), run.TokenID)
		if err != nil || !found {
			return fault("reading the run's token", fmt.Errorf("token %s: found %v: %v", run.TokenID, found, err))
		}
		// The run's own allowance: the token's daily live calls are the
		// bound (charged in BeforeSend); this only stops the engine from
		// counting a long-lived server's runs against one process total.
		own, err := gemini.NewAllowance(gemini.MaxAllowance)
		if err != nil {
			return fault("making the run's allowance", err)
		}
		req.Transport, req.Endpoint, req.Allowance = s.transport, s.endpoint, own
		req.BeforeSend = func([]byte) error {
			now := s.clock()
			ok, err := s.store.Charge(context.Background(), t.ID, day(now), store.LiveCalls, t.DailyLiveCalls)
			if err != nil {
				return fmt.Errorf("charging a live call: %w", err)
			}
			if !ok {
				if now, found, err := s.store.Token(context.Background(), t.ID); err == nil && found && !now.RevokedAt.IsZero() {
					return reason.New(reason.TokenRevoked, "the token was revoked; nothing more is sent")
				}
				return reason.New(reason.BatchRequestLimit, "the token's %d live model calls for today (UTC) are used; nothing was sent", t.DailyLiveCalls)
			}
			return nil
		}
		req.Save = func(data []byte) error {
			return s.store.SaveRecording(context.Background(), run.ID, data, s.clock())
		}
	}
	tr, err := eng.Run(ctx, req)
	if err != nil {
		return fault("running", err)
	}
	report, err := marshal(tr)
	if err != nil {
		return fault("encoding the report", err)
	}
	o := store.Outcome{Report: string(report), At: s.clock()}
	switch {
	case tr.Result != nil:
		o.Status, o.Reason = string(tr.Result.Status), string(tr.Result.Reason)
	case tr.Error != nil:
		o.Status, o.Reason = store.Failed, string(*tr.Error)
	default:
		return fault("running", fmt.Errorf("the run has neither a result nor an error"))
	}
	return o
}

// The events' data (api: QueuedEvent, StartedEvent, StepEvent, EndEvent).
type (
	lifecycleEvent struct {
		RunID         string `json:"run_id"`
		Status        string `json:"status"`
		QueuePosition *int   `json:"queue_position,omitempty"`
	}
	stepEvent struct {
		RunID       string             `json:"run_id"`
		Step        agent.Step         `json:"step"`
		Observation *agent.Observation `json:"observation"`
	}
	endEvent struct {
		RunID  string          `json:"run_id"`
		Status string          `json:"status"`
		Reason string          `json:"reason"`
		Report json.RawMessage `json:"report"`
		Error  json.RawMessage `json:"error"`
	}
)

func (s *Server) event(typ string, v any, r store.Run) store.NewEvent {
	return newEvent(typ, v, s.clock())
}

func newEvent(typ string, v any, at time.Time) store.NewEvent {
	data, err := marshal(v)
	if err != nil { // the types above always encode
		panic(err)
	}
	return store.NewEvent{Type: typ, Data: string(data), At: at}
}

// admitted is the event log of a run just admitted: its first event, as
// the store's admission stored it (first(run) of the run it returns,
// numbered 1: TestAdmissionOrder holds both stores to that).
func (s *Server) admitted(r store.Run) []store.Event {
	e := s.admittedEvent(r)
	return []store.Event{{RunID: r.ID, Seq: 1, Type: e.Type, Data: e.Data, At: e.At}}
}

// admittedEvent is a new run's first event: queued, or started.
func (s *Server) admittedEvent(r store.Run) store.NewEvent {
	if r.Status == store.Queued {
		p := r.Position
		return s.event(EventQueued, lifecycleEvent{RunID: r.ID, Status: r.Status, QueuePosition: &p}, r)
	}
	return s.startedEvent(r)
}

func (s *Server) startedEvent(r store.Run) store.NewEvent {
	return s.event(EventStarted, lifecycleEvent{RunID: r.ID, Status: store.Running}, r)
}

// endEvent is a run's last event, with its report.
func (s *Server) endEvent(r store.Run) store.NewEvent { return endEventAt(s.clock())(r) }

// endEventAt makes end events stamped at.
func endEventAt(at time.Time) store.EventFunc {
	return func(r store.Run) store.NewEvent {
		return newEvent(EventEnd, endEvent{RunID: r.ID, Status: r.Status, Reason: r.Reason,
			Report: rawOrNull(r.Report), Error: rawOrNull(r.Error)}, at)
	}
}

// RevokeToken revokes a token in st and ends what it started
// (store.Store.RevokeToken, with the server's end events): its queued runs
// at once, its running ones at their server's next poll of the store, and
// no model call of theirs is charged or sent after it. ragagent tokens
// revoke calls it from another process than the server's.
func RevokeToken(ctx context.Context, st store.Store, id string, at time.Time) (store.Revoked, bool, error) {
	return st.RevokeToken(ctx, id, at, endEventAt(at))
}

// revokedOutcome is o for a run whose token was revoked while it ran:
// incomplete, token_revoked, when the run stopped for it (cancelled at the
// revoke's request, or its next model call refused); o unchanged when the
// run ended on its own, or its token is valid.
func (rn *runner) revokedOutcome(run store.Run, o store.Outcome) store.Outcome {
	if o.Reason != string(reason.Cancelled) && o.Reason != string(reason.TokenRevoked) {
		return o
	}
	t, found, err := rn.s.store.Token(context.Background(), run.TokenID)
	if err != nil || !found || t.RevokedAt.IsZero() {
		return o
	}
	o.Status, o.Reason = store.Incomplete, string(reason.TokenRevoked)
	return o
}

// stepFlush is how long a Worker's run object holds a step event before
// storing it, with the steps that come meanwhile, in one batch: a scripted
// run's steps come within milliseconds, and each D1 write is a round trip
// (natively each step is written as it comes). A step is streamed only
// once stored; the end is stored after every step.
const stepFlush = 50 * time.Millisecond

// stepWriter stores a run's step events: each at once (delay 0) or held
// for delay and stored with the others that came meanwhile (AppendAll),
// in order; flush stores what is held.
type stepWriter struct {
	s       *Server
	id      string
	delay   time.Duration
	mu      sync.Mutex // pending, timer
	pending []store.NewEvent
	timer   *time.Timer
	writing sync.Mutex // one write at a time, in order
}

func (w *stepWriter) add(e store.NewEvent) {
	w.mu.Lock()
	w.pending = append(w.pending, e)
	if w.delay > 0 && w.timer == nil {
		w.timer = time.AfterFunc(w.delay, w.flush)
	}
	w.mu.Unlock()
	if w.delay == 0 {
		w.flush()
	}
}

// take is what is held once every write under way is done: the run has
// ended, so nothing more comes; the caller stores it (with the end).
func (w *stepWriter) take() []store.NewEvent {
	w.writing.Lock()
	defer w.writing.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	es := w.pending
	w.pending = nil
	return es
}

func (w *stepWriter) flush() {
	w.writing.Lock()
	defer w.writing.Unlock()
	w.mu.Lock()
	es := w.pending
	w.pending = nil
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	w.mu.Unlock()
	if len(es) == 0 {
		return
	}
	s := w.s
	var evs []store.Event
	var err error
	if len(es) == 1 {
		var ev store.Event
		ev, err = s.store.Append(context.Background(), w.id, es[0])
		evs = []store.Event{ev}
	} else {
		evs, err = s.store.AppendAll(context.Background(), w.id, es)
	}
	if err != nil {
		s.log.Error("server fault", "during", "saving a step event", "run", w.id, "error", err.Error())
		return
	}
	for _, ev := range evs {
		s.logs.add(w.id, ev)
	}
	s.hub.notify(w.id)
}
