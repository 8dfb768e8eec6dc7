package server

import (
	"context"
	"sync"
	"time"

	"github.com/ragagentlab/ragagent/internal/server/store"
)

// eventLogs are the events of the runs this process runs, as it stored
// them, for streams to read without a store read per event (on a Worker's
// run object, where the store is D1). A run's log starts with the events
// stored before it started here (one read) and gains each event this
// process stores for it, the end included; it is kept a while after the
// end for late streams. Only a run whose events all come from this
// process is logged: one another writer ended is dropped, and its
// streams read the store.
type eventLogs struct {
	on   bool
	mu   sync.Mutex
	runs map[string]*eventLog
}

type eventLog struct {
	events []store.Event
	done   bool
}

// keepEnded is how long a finished run's log serves late streams.
const keepEnded = time.Minute

// open starts run id's log with its events so far: first when the caller
// read them, else read here.
func (l *eventLogs) open(ctx context.Context, st store.Store, id string, first *[]store.Event) {
	if !l.on {
		return
	}
	var evs []store.Event
	if first != nil {
		evs = *first
	} else {
		var err error
		if evs, err = st.Events(ctx, id, 0, streamPage); err != nil {
			return
		}
	}
	if len(evs) >= streamPage {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs == nil {
		l.runs = map[string]*eventLog{}
	}
	l.runs[id] = &eventLog{events: evs}
}

func (l *eventLogs) add(id string, ev store.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.runs[id]; ok {
		if n := len(r.events); n > 0 && r.events[n-1].Seq+1 != ev.Seq {
			delete(l.runs, id) // a gap: another writer
			return
		}
		r.events = append(r.events, ev)
	}
}

// finish adds the end event Finish stored (numbered after the last).
func (l *eventLogs) finish(id string, end store.NewEvent) {
	l.mu.Lock()
	r, ok := l.runs[id]
	if ok {
		var seq int64 = 1
		if n := len(r.events); n > 0 {
			seq = r.events[n-1].Seq + 1
		}
		r.events = append(r.events, store.Event{RunID: id, Seq: seq, Type: end.Type, Data: end.Data, At: end.At})
		r.done = true
	}
	l.mu.Unlock()
	if ok {
		time.AfterFunc(keepEnded, func() { l.drop(id) })
	}
}

func (l *eventLogs) drop(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.runs, id)
}

// after is the logged events after seq (at most limit), whether the run
// has ended, and whether the run is logged here at all.
func (l *eventLogs) after(id string, seq int64, limit int) (evs []store.Event, done, held bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.runs[id]
	if !ok {
		return nil, false, false
	}
	for _, e := range r.events {
		if e.Seq > seq {
			evs = append(evs, e)
			if len(evs) == limit {
				break
			}
		}
	}
	return evs, r.done && len(evs) < limit, true
}
