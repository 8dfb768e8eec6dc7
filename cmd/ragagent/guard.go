package main

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

// keyGuard is the last check between the API key and anything the command
// writes: every file (recording, report, ledger) and every line of stdout
// and stderr is scanned for the key in any form an echo can take
// (secret.Contains) and refused if it holds it. The transport redacts every
// response body first, so a refusal here means something got past it: the
// file is not written (a recording that cannot be saved stops the run) and
// the line is replaced by a notice, and the command exits 1.
type keyGuard struct {
	key string

	mu     sync.Mutex
	leaked bool
}

// newKeyGuard guards key (trimmed, as the transport sends it); "" guards
// nothing.
func newKeyGuard(key string) *keyGuard { return &keyGuard{key: strings.TrimSpace(key)} }

// envGuard guards the environment's key (GOOGLE_API_KEY or
// GEMINI_API_KEY), the one a live call would send.
func envGuard() *keyGuard {
	key, _ := httptransport.KeyFromEnv(os.Getenv)
	return newKeyGuard(key)
}

// writeFile is how a command writes a file, so none skips the last check:
// data holding the key is refused with nothing written (g.check), then the
// file is written atomically, whole or absent. fresh creates a file that
// must not exist (atomicfile.Create); otherwise the file is replaced
// (atomicfile.Write).
func writeFile(g *keyGuard, path string, data []byte, fresh bool) error {
	if err := g.check(path, data); err != nil {
		return err
	}
	if fresh {
		return atomicfile.Create(path, data)
	}
	return atomicfile.Write(path, data)
}

// check refuses data that holds the key; what names it for the message.
func (g *keyGuard) check(what string, data []byte) error {
	if g == nil || g.key == "" || !secret.Contains(data, g.key) {
		return nil
	}
	g.mu.Lock()
	g.leaked = true
	g.mu.Unlock()
	return fmt.Errorf("refusing to write %s: it contains the API key; nothing was written", what)
}

// Leaked reports whether anything was refused.
func (g *keyGuard) Leaked() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.leaked
}

// withheld replaces a line that held the key.
const withheld = "[a line of output was withheld: it contained the API key]\n"

// lines is a writer that passes on whole lines once they are checked
// (the key has no line break, so a line is the unit to scan); Flush passes
// on the last, unterminated one.
type lines struct {
	g   *keyGuard
	w   io.Writer
	mu  sync.Mutex
	buf []byte
}

func (g *keyGuard) writer(w io.Writer) *lines { return &lines{g: g, w: w} }

func (l *lines) Write(p []byte) (int, error) {
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
func (l *lines) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) == 0 {
		return nil
	}
	err := l.pass(l.buf)
	l.buf = nil
	return err
}

func (l *lines) pass(line []byte) error {
	if l.g.check("a line of output", line) != nil {
		line = []byte(withheld)
	}
	_, err := l.w.Write(line)
	return err
}
