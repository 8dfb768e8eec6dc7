//go:build js && wasm

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/ragagentlab/ragagent/core/lab"
	"github.com/ragagentlab/ragagent/core/recording"
	"github.com/ragagentlab/ragagent/fixtures"
	"github.com/ragagentlab/ragagent/recordings"
)

// maxWarmRounds bounds one warm() call, so a call cannot hold the worker
// for long; the shell calls it repeatedly.
const maxWarmRounds = 50

// replayEvery is how often a warm round also replays the bundled recording
// (the page's first action after start-up) on its throwaway lab.
const replayEvery = 5

// warm repeats the engine's start-up on throwaway labs: open a lab
// (decode the corpus and cases, open SQLite, register FTS5, build the
// index), parse the bundled recording, search, and now and then replay.
// The results are discarded and the session is untouched.
//
// Why: V8 keeps compiled WASM code across visits only for functions its
// optimising tier (TurboFan) has compiled, and it only optimises functions
// that ran often. Start-up code runs once per visit, so without this every
// visit compiles it again with the baseline tier (Liftoff), which for the
// translated SQLite is most of the start-up time. A few hundred rounds,
// once per engine build, make that code hot; the browser then writes it to
// its code cache and the next visit starts from optimised code.
// round is the number of rounds done before this call (it picks the
// rounds that replay).
func (e *engine) warm(rounds, round int) (any, error) {
	if rounds < 1 || rounds > maxWarmRounds {
		return nil, fmt.Errorf("warm: rounds must be from 1 to %d", maxWarmRounds)
	}
	if _, err := e.loaded(); err != nil {
		return nil, err
	}
	started := time.Now()
	for i := 0; i < rounds; i++ {
		if err := warmRound((round+i)%replayEvery == replayEvery-1); err != nil {
			return nil, err
		}
	}
	return map[string]any{"rounds": rounds, "elapsed_ms": float64(time.Since(started).Microseconds()) / 1000}, nil
}

func warmRound(replay bool) error {
	l, err := lab.Open(fixtures.Snapshot, fixtures.Cases)
	if err != nil {
		return err
	}
	defer l.Close()
	file, err := recording.Parse(recordings.AgentComparison)
	if err != nil {
		return err
	}
	if _, err := l.Explain("write_text encoding utf-8", 4, ""); err != nil {
		return err
	}
	if replay {
		_, err = l.Replay(context.Background(), file, nil)
	}
	return err
}
