// Package keyguard is the last check between the API key and anything a
// command writes: every file (recording, report, ledger, export) and
// every line of stdout and stderr is scanned for the key in any form an
// echo can take (secret.Contains) and refused if it holds it. The
// transport redacts every response body first (internal/httptransport),
// so a refusal here means something got past it: the file is not written
// (a recording that cannot be saved stops the run) and the line is
// replaced by a notice, and the command exits 1.
package keyguard

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/ragagentlab/ragagent/core/secret"
	"github.com/ragagentlab/ragagent/internal/atomicfile"
	"github.com/ragagentlab/ragagent/internal/httptransport"
)

// Guard guards one key, and remembers whether it refused anything.
type Guard struct {
	key string

	mu     sync.Mutex
	leaked bool
}

// New guards key (trimmed, as the transport sends it); "" guards nothing.
func New(key string) *Guard { return &Guard{key: strings.TrimSpace(key)} }

// FromEnv guards the environment's key (GOOGLE_API_KEY or GEMINI_API_KEY),
// the one a live call would send.
func FromEnv() *Guard {
	key, _ := httptransport.KeyFromEnv(os.Getenv)
	return New(key)
}

// WriteFile is how a command writes a file, so none skips the last check:
// data holding the key is refused with nothing written (Check), then the
// file is written atomically, whole or absent. fresh creates a file that
// must not exist (atomicfile.Create); otherwise the file is replaced
// (atomicfile.Write).
func (g *Guard) WriteFile(path string, data []byte, fresh bool) error {
	if err := g.Check(path, data); err != nil {
		return err
	}
	if fresh {
		return atomicfile.Create(path, data)
	}
	return atomicfile.Write(path, data)
}

// Check refuses data that holds the key; what names it for the message.
func (g *Guard) Check(what string, data []byte) error {
	if g == nil || g.key == "" || !secret.Contains(data, g.key) {
		return nil
	}
	g.mu.Lock()
	g.leaked = true
	g.mu.Unlock()
	return fmt.Errorf("refusing to write %s: it contains the API key; nothing was written", what)
}

// Leaked reports whether anything was refused.
func (g *Guard) Leaked() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.leaked
}

// Withheld replaces a line that held the key.
const Withheld = "[a line of output was withheld: it contained the API key]\n"

// Lines is a writer that passes on whole lines once they are checked
// (the key has no line break, so a line is the unit to scan); Flush passes
// on the last, unterminated one.
type Lines struct {
	g   *Guard
	w   io.Writer
	mu  sync.Mutex
	buf []byte
}

// Writer checks every line written to w.
func (g *Guard) Writer(w io.Writer) *Lines { return &Lines{g: g, w: w} }

func (l *Lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if err := l.pass(l.buf[:i+1]); err != nil {
			return 0, err
		}
		l.buf = l.buf[i+1:]
	}
}

// Flush passes on what is left.
func (l *Lines) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) == 0 {
		return nil
	}
	err := l.pass(l.buf)
	l.buf = nil
	return err
}

func (l *Lines) pass(line []byte) error {
	if l.g.Check("a line of output", line) != nil {
		line = []byte(Withheld)
	}
	_, err := l.w.Write(line)
	return err
}
