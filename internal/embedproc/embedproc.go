// Package embedproc runs models for the command line: the project's
// transformers.js runner (lab/embed.mjs) as a child process speaking JSON
// lines, one process per model folder, a sentence encoder's or a
// cross-encoder's, so the command line's query vectors come from the same
// runtime that made the pack's passage vectors. A Process implements
// vectors.Embedder and retrieval.Scorer; Models is engine.Models.
//
// The protocol: the child writes {"ready": true, "model": {...}} (or
// {"error": {"code", "message"}}) on start; each request line {"id",
// "texts"} is answered in order by {"id", "dimensions", "f32"} (the
// vectors' little-endian float32 bytes, row after row, base64) or {"id",
// "error"}. Closing its stdin ends it.
package embedproc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/ragagentlab/ragagent/core/vectors"
)

// MaxLine bounds one protocol line (a batch of 64 vectors of 4,096
// dimensions in base64 is 1.4 MB).
const MaxLine = 64 << 20

// StartTimeout bounds the child's start-up (loading the model).
const StartTimeout = 2 * time.Minute

// Process is a running embedder. It is safe for concurrent use: requests
// are sent one at a time.
type Process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Reader
	stderr *tail
	model  vectors.Model

	mu   sync.Mutex
	next int
	dead error
}

// Start runs command (the program and its arguments, e.g. node
// lab/embed.mjs serve --model DIR) and waits for its ready line.
func Start(ctx context.Context, command []string) (*Process, error) {
	if len(command) == 0 {
		return nil, errors.New("embedproc: no command")
	}
	cmd := exec.Command(command[0], command[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	errs := &tail{}
	cmd.Stderr = errs
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("embedproc: start %s: %w", command[0], err)
	}
	p := &Process{cmd: cmd, stdin: stdin, lines: bufio.NewReaderSize(stdout, 1<<16), stderr: errs}
	type ready struct {
		Ready bool          `json:"ready"`
		Model vectors.Model `json:"model"`
		Error *protoError   `json:"error"`
	}
	var r ready
	err = p.within(ctx, StartTimeout, func() error { return p.read(&r) })
	switch {
	case err != nil:
	case r.Error != nil:
		err = r.Error
	case !r.Ready:
		err = errors.New("its first line is not {\"ready\": true, ...}")
	default:
		err = r.Model.Check()
	}
	if err != nil {
		p.Close()
		return nil, p.failed("did not start", err)
	}
	p.model = r.Model
	return p, nil
}

// Model is the model the child loaded, as it reported it.
func (p *Process) Model() vectors.Model { return p.model }

// request is one protocol request: texts to embed, or with Query the
// (query, text) pairs a cross-encoder scores.
type request struct {
	ID    int      `json:"id"`
	Query *string  `json:"query,omitempty"`
	Texts []string `json:"texts"`
}

// response is one protocol answer.
type response struct {
	ID         int         `json:"id"`
	Dimensions int         `json:"dimensions"`
	F32        string      `json:"f32"`
	Scores     []float64   `json:"scores"`
	Error      *protoError `json:"error"`
}

// Embed sends texts in one request and returns their vectors.
func (p *Process) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	resp, err := p.send(ctx, request{Texts: texts})
	if err != nil {
		return nil, err
	}
	return decode(resp.F32, resp.Dimensions, len(texts), p.model.Dimensions)
}

// Score sends (query, text) pairs to a cross-encoder in one request and
// returns one logit per text.
func (p *Process) Score(ctx context.Context, query string, texts []string) ([]float64, error) {
	resp, err := p.send(ctx, request{Query: &query, Texts: texts})
	if err != nil {
		return nil, err
	}
	if len(resp.Scores) != len(texts) {
		return nil, fmt.Errorf("the cross-encoder sent %d scores for %d texts", len(resp.Scores), len(texts))
	}
	return resp.Scores, nil
}

// send writes one request and reads its answer; a child that ends, hangs
// past ctx or answers out of step is dead from then on.
func (p *Process) send(ctx context.Context, req request) (*response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead != nil {
		return nil, p.dead
	}
	p.next++
	req.ID = p.next
	line, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var resp response
	err = p.within(ctx, 0, func() error {
		if _, err := p.stdin.Write(append(line, '\n')); err != nil {
			return err
		}
		return p.read(&resp)
	})
	// The child is closed (waited for) before its error is made: what it
	// wrote to stderr is copied in by exec until Wait returns, so an error
	// made first could miss its last words.
	if err != nil {
		p.Close()
		p.dead = p.failed("stopped", err)
		return nil, p.dead
	}
	if resp.ID != req.ID {
		p.Close()
		p.dead = p.failed("is out of step", fmt.Errorf("it answered request %d to request %d", resp.ID, req.ID))
		return nil, p.dead
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("the model refused %d texts: %w", len(req.Texts), resp.Error)
	}
	return &resp, nil
}

func decode(f32 string, dims, n, want int) ([][]float32, error) {
	if dims != want {
		return nil, fmt.Errorf("the embedder's vectors have %d dimensions; its model's have %d", dims, want)
	}
	raw, err := base64.StdEncoding.DecodeString(f32)
	if err != nil {
		return nil, fmt.Errorf("the embedder's f32 is not base64: %v", err)
	}
	if len(raw) != 4*dims*n {
		return nil, fmt.Errorf("the embedder sent %d bytes for %d vectors of %d dimensions (%d)", len(raw), n, dims, 4*dims*n)
	}
	out := make([][]float32, n)
	for i := range out {
		row := make([]float32, dims)
		for j := range row {
			row[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(i*dims+j):]))
		}
		out[i] = row
	}
	return out, nil
}

// Close ends the child (its stdin closed, then killed if it lingers).
func (p *Process) Close() error {
	p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		return <-done
	}
}

// read reads one protocol line (at most MaxLine bytes) into v.
func (p *Process) read(v any) error {
	var line []byte
	for {
		chunk, err := p.lines.ReadSlice('\n')
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(line) > MaxLine {
				return fmt.Errorf("it wrote a line over %d bytes", MaxLine)
			}
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("it ended")
			}
			return err
		}
		break
	}
	if err := json.Unmarshal(bytes.TrimSpace(line), v); err != nil {
		return fmt.Errorf("it wrote a line that is not the protocol's: %q", clip(string(line)))
	}
	return nil
}

// within runs fn, giving up when ctx ends or after timeout (0: none); the
// child is killed then, as its line may never come.
func (p *Process) within(ctx context.Context, timeout time.Duration, fn func() error) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		p.cmd.Process.Kill()
		<-done
		return ctx.Err()
	}
}

// failed is err with what the child last wrote to stderr.
func (p *Process) failed(what string, err error) error {
	said := ""
	if t := p.stderr.String(); t != "" {
		said = "; it said: " + t
	}
	return fmt.Errorf("the model process %s: %w%s", what, err, said)
}

type protoError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *protoError) Error() string { return e.Code + ": " + e.Message }

// tail keeps the last lines a child wrote to stderr.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > 4096 {
		t.buf = t.buf[len(t.buf)-4096:]
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	return clip(strings.Join(lines[max(0, len(lines)-3):], " | "))
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}
