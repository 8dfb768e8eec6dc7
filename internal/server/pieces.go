package server

import (
	"context"
	"time"

	"github.com/ragagentlab/ragagent/internal/server/store"
)

// ExperimentPiece bounds a piece of an experiment where experiments run
// in pieces (a server with a Dispatch: a Worker's run objects, whose
// every call or alarm must finish within the platform's limits): at most
// Units rankings or trials kept, and no more kept once Time has passed
// since the piece began. Each piece starts from what the store kept (as
// a restart does), so a piece lost with its object loses nothing kept.
type ExperimentPiece struct {
	Units int
	Time  time.Duration
}

// The defaults of ExperimentPiece: a piece ends well within the 30 s of
// CPU a Durable Object's alarm may spend, its engine's set-up included.
const (
	DefaultPieceUnits = 500
	DefaultPieceTime  = 5 * time.Second
)

func (p ExperimentPiece) withDefaults() ExperimentPiece {
	if p.Units <= 0 {
		p.Units = DefaultPieceUnits
	}
	if p.Time <= 0 {
		p.Time = DefaultPieceTime
	}
	return p
}

// budget is what a piece may still do: units to keep, until a time (the
// wall clock's, not the server's), and stop, which ends the piece.
type budget struct {
	units int
	until time.Time
	stop  context.CancelCauseFunc
}

// spend counts a unit kept; when more are to come and the piece has kept
// its units or run its time, it ends the piece (after the unit was kept:
// nothing made is dropped). A nil budget bounds nothing.
func (b *budget) spend(more bool) {
	if b == nil {
		return
	}
	b.units--
	if more && (b.units <= 0 || !time.Now().Before(b.until)) {
		b.stop(errPiece)
	}
}

// startPieces starts queued experiments while fewer than the cap run and
// hands each one another process owns to it (Dispatch.Experiment: its
// owner runs it in pieces); this process's own run in its next round of
// pieces. The calls are made with no lock held: an owner's answer may
// start experiments and call back. One that could not be handed over
// ends failed at once, as a run does, not left running with nobody to
// run it.
func (xs *experiments) startPieces() {
	var started []store.Experiment
	xs.start.Lock()
	for !xs.s.isClosing() {
		x, ok, err := xs.st.StartExperiment(context.Background(), xs.caps.Running, xs.now(), func(x store.Experiment) store.NewEvent {
			return experimentEvent(EventStarted, x, xs.now())
		})
		if err != nil {
			xs.s.log.Error("server fault", "during", "starting a queued experiment", "error", err.Error())
			break
		}
		if !ok {
			break
		}
		xs.s.hub.notify(x.ID)
		started = append(started, x)
	}
	xs.start.Unlock()
	for _, x := range started {
		if xs.s.dispatch.Local(x.ID) {
			continue
		}
		if err := xs.s.dispatch.Experiment(context.Background(), x.ID); err != nil {
			xs.s.log.Error("server fault", "during", "handing an experiment to its runner", "experiment", x.ID, "error", err.Error())
			body, _ := marshal(errorBody{CodeInternal, "the server failed while handing the experiment to its runner"})
			xs.finish(x.ID, store.ExperimentOutcome{State: store.ExperimentFailed, Error: string(body)})
			xs.s.hub.notify(x.ID)
		}
	}
}

// owned are the running experiments this process owns.
func (xs *experiments) owned(ctx context.Context) ([]store.Experiment, error) {
	running, err := xs.st.RunningExperiments(ctx)
	if err != nil {
		return nil, err
	}
	var out []store.Experiment
	for _, x := range running {
		if xs.s.dispatch.Local(x.ID) {
			out = append(out, x)
		}
	}
	return out, nil
}

// runPieces is one round of a run object's experiments (its alarm):
// queued ones start as the cap allows, then each running one this process
// owns runs one piece, from the rankings or trials the store kept, and
// ends when that piece made its last. left is how many still run after
// the round (the object calls again while any do), kept how many units
// the round kept.
func (xs *experiments) runPieces(ctx context.Context) (left, kept int, err error) {
	xs.running.Lock()
	defer xs.running.Unlock()
	xs.startPieces()
	mine, err := xs.owned(ctx)
	if err != nil {
		return 0, 0, err
	}
	ended := false
	for _, x := range mine {
		if xs.s.isClosing() {
			break
		}
		pctx, stop := context.WithCancelCause(context.Background())
		xs.mu.Lock()
		xs.active[x.ID] = stop
		xs.mu.Unlock()
		b := &budget{units: xs.piece.Units, until: time.Now().Add(xs.piece.Time), stop: stop}
		o, ok := xs.execute(pctx, x, b)
		xs.mu.Lock()
		delete(xs.active, x.ID)
		xs.mu.Unlock()
		stop(nil)
		kept += xs.piece.Units - b.units
		if ok {
			xs.finish(x.ID, o)
			ended = true
		}
		xs.s.hub.notify(x.ID)
	}
	if ended {
		xs.startPieces()
	}
	if mine, err = xs.owned(ctx); err != nil {
		return 0, kept, err
	}
	return len(mine), kept, nil
}
