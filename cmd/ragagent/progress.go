package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress shows "verb done/total documents" on w while a long step runs.
// On a terminal it redraws one line (a carriage return before each
// count, at most every half second, and a line end when done); into a
// pipe or a file, where a carriage return does not go back, it writes
// whole lines, at most one every pipeEvery, and always the last count.
type progress struct {
	w     io.Writer
	verb  string
	noun  string // what is counted ("" is documents)
	tty   bool
	now   func() time.Time
	last  time.Time
	drawn bool // a terminal line is open (no line end yet)
}

// Redraw and line intervals of progress.
const (
	ttyEvery  = 500 * time.Millisecond
	pipeEvery = 2 * time.Second
)

func newProgress(w io.Writer, verb string) *progress {
	return &progress{w: w, verb: verb, tty: isTerminal(w), now: time.Now}
}

// newCounter is a progress counting something other than documents.
func newCounter(w io.Writer, verb, noun string) *progress {
	p := newProgress(w, verb)
	p.noun = noun
	return p
}

func (p *progress) unit() string {
	if p.noun == "" {
		return "documents"
	}
	return p.noun
}

// isTerminal reports whether w is a terminal (a character device: a
// pipe, a file or a buffer is not).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

func (p *progress) step(done, total int) {
	now := p.now()
	every := ttyEvery
	if !p.tty {
		every = pipeEvery
		if p.last.IsZero() {
			p.last = now // the first line waits its interval: a short step writes only its last count
		}
	}
	if done != total && !p.last.IsZero() && now.Sub(p.last) < every {
		return
	}
	p.last = now
	if p.tty {
		fmt.Fprintf(p.w, "\r%s %d/%d %s", p.verb, done, total, p.unit())
		p.drawn = true
		return
	}
	fmt.Fprintf(p.w, "%s %d/%d %s\n", p.verb, done, total, p.unit())
}

// done ends the terminal's line.
func (p *progress) done() {
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}
