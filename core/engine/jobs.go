package engine

import (
	"context"
	"sync"
)

// jobs are the engine's work in progress that a person may stop: runs and
// live reranks, each known by a number, so a front end that cannot hold a
// Go context (the page, a server's cancel endpoint) can cancel by id.
type jobs struct {
	mu     sync.Mutex
	next   int
	cancel map[int]context.CancelFunc
}

// Job is work started with Start.
type Job[T any] struct {
	// ID is what Cancel takes.
	ID   int
	done chan struct{}
	v    T
	err  error
}

// Wait blocks until the job ends and returns its result.
func (j *Job[T]) Wait() (T, error) {
	<-j.done
	return j.v, j.err
}

// Start runs work on a goroutine under a context that Cancel(id) cancels,
// until work returns.
func Start[T any](e *Engine, work func(ctx context.Context) (T, error)) *Job[T] {
	ctx, stop := context.WithCancel(context.Background())
	id := e.jobs.add(stop)
	j := &Job[T]{ID: id, done: make(chan struct{})}
	go func() {
		defer close(j.done)
		defer e.jobs.remove(id)
		defer stop()
		j.v, j.err = work(ctx)
	}()
	return j
}

func (js *jobs) add(stop context.CancelFunc) int {
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.cancel == nil {
		js.cancel = map[int]context.CancelFunc{}
	}
	js.next++
	js.cancel[js.next] = stop
	return js.next
}

func (js *jobs) remove(id int) {
	js.mu.Lock()
	defer js.mu.Unlock()
	delete(js.cancel, id)
}

// Cancel stops a job: a run ends incomplete with reason cancelled, a live
// rerank stops before its next request. It reports whether the job was
// still running.
func (e *Engine) Cancel(id int) bool {
	e.jobs.mu.Lock()
	stop, ok := e.jobs.cancel[id]
	e.jobs.mu.Unlock()
	if ok {
		stop()
	}
	return ok
}
