package recording

import (
	"bytes"
	"errors"
	"sync"

	"github.com/ragagentlab/ragagent/core/gemini"
)

// Recorder builds a recording while a batch runs and hands the whole file to
// save after every change: when the batch starts, when a trial starts,
// before every attempt is sent and after it, and when a trial ends. Saving after each attempt (rather
// than at the end) is what makes a crash, a kill or a full disk lose
// nothing that was paid for; save should therefore replace the file
// atomically. The recorder never sees a key: attempts carry only bodies.
type Recorder struct {
	mu   sync.Mutex
	file File
	save func(data []byte) error
}

// NewMemoryRecorder keeps the recording in memory only (the page offers it
// for download), so no attempt pays for serializing the whole file again.
func NewMemoryRecorder(head File) *Recorder {
	head.Trials = nil
	return &Recorder{file: head}
}

// NewRecorder starts a recording with head's provider settings (its trials
// are ignored) and saves it once, so the output exists before anything is
// sent.
func NewRecorder(head File, save func(data []byte) error) (*Recorder, error) {
	if save == nil {
		return nil, errors.New("recording: a recorder needs somewhere to save")
	}
	head.Trials = nil
	r := &Recorder{file: head, save: save}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r, r.flush()
}

// flush saves the file; the caller holds mu.
func (r *Recorder) flush() error {
	if r.save == nil {
		return nil // kept in memory only: nothing to serialize until File is asked for
	}
	var buf bytes.Buffer
	if err := r.file.Write(&buf); err != nil {
		return err
	}
	return r.save(buf.Bytes())
}

// File returns a copy of the recording so far.
func (r *Recorder) File() *File {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.file
	f.Trials = make([]Trial, len(r.file.Trials))
	for i, t := range r.file.Trials {
		t.Exchanges = append([]Exchange(nil), t.Exchanges...)
		f.Trials[i] = t
	}
	return &f
}

// Begin adds a trial (its exchanges are ignored) and saves.
func (r *Recorder) Begin(t Trial) (*TrialLog, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t.Exchanges = []Exchange{}
	t.ElapsedSeconds = nil
	r.file.Trials = append(r.file.Trials, t)
	return &TrialLog{r: r, i: len(r.file.Trials) - 1}, r.flush()
}

// TrialLog appends one trial's attempts to its recorder.
type TrialLog struct {
	r *Recorder
	i int
}

// Record appends an attempt and saves; use it as the live model's record
// function. A pending attempt (recorded before it is sent) is appended as
// a pending exchange; the attempt recorded after its reply replaces it, so
// a finished recording is what it was before write-ahead records existed.
func (l *TrialLog) Record(a gemini.Attempt) error {
	l.r.mu.Lock()
	defer l.r.mu.Unlock()
	t := &l.r.file.Trials[l.i]
	if n := len(t.Exchanges); !a.Pending && n > 0 && t.Exchanges[n-1].Pending {
		t.Exchanges[n-1] = ExchangeOf(a)
	} else {
		t.Exchanges = append(t.Exchanges, ExchangeOf(a))
	}
	return l.r.flush()
}

// Finish records the trial's elapsed seconds and saves.
func (l *TrialLog) Finish(elapsedSeconds float64) error {
	l.r.mu.Lock()
	defer l.r.mu.Unlock()
	l.r.file.Trials[l.i].ElapsedSeconds = &elapsedSeconds
	return l.r.flush()
}

// ExchangeOf is an attempt as a recorded exchange.
func ExchangeOf(a gemini.Attempt) Exchange {
	if a.Pending {
		return Exchange{Request: a.Request, Error: gemini.NotRecorded, Pending: true, SentAt: a.SentAt}
	}
	ex := Exchange{Request: a.Request, Error: a.Error, HTTPStatus: a.HTTPStatus, SentAt: a.SentAt}
	if a.Error == "" {
		ex.Response = a.Response
	}
	return ex
}
