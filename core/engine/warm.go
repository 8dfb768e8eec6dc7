package engine

import (
	"context"
	"fmt"
	"time"
)

// MaxWarmRounds bounds one warm() call, so a call cannot hold the worker
// for long; the shell calls it repeatedly.
const MaxWarmRounds = 50

// replayEvery is how often a warm round also replays the bundled recording
// (the page's first action after start-up) on its throwaway engine.
const replayEvery = 5

// Warmed is what Warm did: how many rounds, in how long.
type Warmed struct {
	Rounds    int     `json:"rounds"`
	ElapsedMS float64 `json:"elapsed_ms"`
}

// Warm repeats the engine's start-up on throwaway engines: open one
// (decode the corpus and cases, open SQLite, register FTS5, build the
// index, parse the bundled recording), search, and now and then replay.
// The results are discarded and the caller's engine is untouched. It
// reads no JS, so it lives here; the page's worker calls it through the
// wasm export warm.
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
func Warm(rounds, round int) (*Warmed, error) {
	if rounds < 1 || rounds > MaxWarmRounds {
		return nil, fmt.Errorf("warm: rounds must be from 1 to %d", MaxWarmRounds)
	}
	started := time.Now()
	for i := 0; i < rounds; i++ {
		if err := warmRound((round+i)%replayEvery == replayEvery-1); err != nil {
			return nil, err
		}
	}
	return &Warmed{Rounds: rounds, ElapsedMS: float64(time.Since(started).Microseconds()) / 1000}, nil
}

func warmRound(replay bool) error {
	e, err := Open(Options{})
	if err != nil {
		return err
	}
	defer e.Close()
	if _, err := e.Search(SearchRequest{Query: "write_text encoding utf-8", K: 4}); err != nil {
		return err
	}
	if replay {
		_, err = e.Replay(context.Background(), ReplayRequest{})
	}
	return err
}
